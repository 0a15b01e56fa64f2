/* SPDX-License-Identifier: MIT */
/*
 * A demand that finds no victim to send, with room left in host swap,
 * fails and leaves the copies in swap as they were: dropping one frees
 * host memory, never a chunk, and would turn a tensor one reload away
 * into one only a regeneration can bring back. The tensor comes back by
 * reload, byte for byte, with nothing regenerated. Host backend: the
 * regeneration hook here writes nothing, so a dropped copy would come
 * back as other bytes.
 */
#include <errno.h>
#include <string.h>

#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-hooks-util.h"
#include "tests/tap.h"

#define CHUNK (4u << 10)
#define BYTES (2 * CHUNK)

static bool refuse;

/* A policy that, asked while refusing, finds no victim it would send. */
static int h_choose(void *priv, size_t need, bool no_offload,
		    struct tp_tensor **victim, enum tp_leave *how)
{
	if (refuse || !pt_cands.n)
		return -ENOENT;
	*victim = pt_cands.t[0];
	*how = TP_LEAVE_OFFLOAD;
	return 0;
}

static struct tp_tensor *written(struct tp_ctx *ctx, int byte)
{
	struct tp_tensor *t = tp_tensor_create(ctx, BYTES, 0);
	void *p = t ? tp_tensor_acquire(ctx, t, TP_WRITE) : NULL;

	if (!p)
		bail_out("cannot write a tensor: %s", strerror(errno));
	memset(p, byte, BYTES);
	tp_tensor_release(ctx, t);
	return t;
}

static bool holds(struct tp_ctx *ctx, struct tp_tensor *t, int byte)
{
	const unsigned char *p = tp_tensor_acquire(ctx, t, TP_READ);
	bool good = p != NULL;

	for (size_t i = 0; good && i < BYTES; i++)
		good = p[i] == (unsigned char)byte;
	if (p)
		tp_tensor_release(ctx, t);
	return good;
}

int main(void)
{
	struct tp_victim_ops ops = {
		.add = pt_cand_add, .del = pt_cand_del, .touch = pt_cand_touch,
		.choose = h_choose,
	};
	struct tp_tensor *a, *b, *c;
	struct tp_ctx *ctx;
	size_t swapped;

	plan_tests(6);
	/* Four chunks of budget, sixteen of host swap. */
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=16K,pager.host_budget=64K,"
			    "pager.rescue=0,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.high_watermark=100,"
			    "pager.low_watermark=100");
	if (!ctx)
		bail_out("tp_ctx_create(host): %s", strerror(errno));
	pt_hooks_set(ctx, &ops);

	a = written(ctx, 0xa5);
	b = written(ctx, 0x5b);
	ok(!tp_pager_offload(ctx->pager, a) && !tp_pager_settle(ctx->pager, a, 0, a->nr_pages - 1),
	   "a goes to host swap");
	swapped = a->nr_pages - a->resident_pages - a->evicted_pages;
	ok(swapped == 2 && tp_pager_swap_room_pages(ctx->pager) >= 2,
	   "a's two pages are in swap, which has room left");

	/* Three chunks wanted, two free, b a candidate the policy refuses. */
	refuse = true;
	c = tp_tensor_create(ctx, 3 * CHUNK, 0);
	ok(c && !tp_tensor_acquire(ctx, c, TP_WRITE) && errno == ENOMEM,
	   "a demand no victim can meet fails with ENOMEM");
	ok(a->evicted_pages == 0 &&
	   a->nr_pages - a->resident_pages == 2,
	   "a's copies are still in swap (%zu evicted)", a->evicted_pages);

	refuse = false;
	ok(holds(ctx, a, 0xa5) && pt_regens == 0,
	   "a comes back by reload, byte for byte (%u regenerated)",
	   pt_regens);
	ok(holds(ctx, b, 0x5b), "b as written");
	tp_tensor_free(ctx, c);
	tp_ctx_destroy(ctx);
	return exit_status();
}
