/* SPDX-License-Identifier: MIT */
/*
 * policy.regen_max: a tensor made by an op whose parts read their own
 * rows alone (TP_OP_SPLIT_LOCAL), whose regeneration would hold more of
 * the budget than the key allows, leaves by offload only: ops of its
 * kind read it back by rows, where a regeneration holds its maker's
 * operands whole. The evict-only baselines keep their papers' rule. On
 * the host backend, 8 chunks of 4 KiB, the contents checked:
 *
 *  - y = softsign by rows (x), two chunks each: its regeneration holds 4
 *    chunks, above 40% of 8 (3.2); y1, the same on one chunk: 2, below;
 *    y2 = softsign(x), not by rows: its reader takes it whole anyway;
 *  - under delta at 40%, a request that needs y's room sends y to host
 *    swap, not away (on a link of 1 MB/s, where DELTA's F alone evicts
 *    it): none of its pages evicted, and it comes back intact;
 *  - under the evict-only director (set at run time) the rule does not
 *    hold: the same request evicts y, which comes back regenerated, bit
 *    for bit;
 *  - at 100% (set at run time) it does not hold under delta either;
 *  - at the default (50), in 16 chunks, a regeneration holding 56% of the
 *    budget is too big: one such regeneration, of a batch-norm input at
 *    59.8%, failed ResNet-50 at batch 640 in 4 GiB on the sim's h200
 *    profile under the old 60.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/tensor.h"
#include "policy/policy_priv.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	4096
#define FLOATS	(CHUNK / 4)

static struct tp_ctx *ctx;

/* out = softsign(in), a part on its rows alone: one row per float. */
static int rows_launch(const struct tp_op_launch *l)
{
	const float *in = l->in[0];
	float *out = l->out[0];

	for (size_t i = 0; i < l->in_bytes[0] / 4; i++)
		out[i] = tops_ref_softsign(in[i]);
	return 0;
}

static int rows_split(const void *params, size_t params_len,
		      const size_t *in_bytes, unsigned n_in,
		      const size_t *out_bytes, unsigned n_out,
		      struct tp_op_split *s)
{
	if (n_in != 1 || n_out != 1 || in_bytes[0] != out_bytes[0])
		return -EINVAL;
	*s = (struct tp_op_split){ .rows = in_bytes[0] / 4, .in = 1, .out = 1 };
	return 0;
}

static const struct tp_op_type softsign_rows = {
	.name = "softsign-rows", .launch = rows_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, .split = rows_split,
};

/* Whether @y holds softsign of @x, bit for bit. */
static bool softsign_of(struct tp_tensor *y, struct tp_tensor *x, size_t n)
{
	static float a[5 * FLOATS], b[5 * FLOATS];

	if (n > 5 * FLOATS || tp_tensor_read(ctx, x, 0, a, n * 4) ||
	    tp_tensor_read(ctx, y, 0, b, n * 4))
		return false;
	for (size_t i = 0; i < n; i++) {
		float want = tops_ref_softsign(a[i]);

		if (memcmp(&want, &b[i], sizeof(want)))
			return false;
	}
	return true;
}

static int request(size_t chunks, struct tp_tensor **out)
{
	return tops_request(ctx, chunks * CHUNK, out);
}

int main(void)
{
	struct tp_tensor *x, *y, *x1, *y1, *y2, *q;
	struct tp_stats st;
	int ret;

	plan_tests(10);
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=32K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.rescue=0,"
			    "pager.high_watermark=100,policy.filter=lru,"
			    "policy.director=delta,policy.regen_max=40,"
			    "policy.link_bandwidth=0.001");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x = tops_input(ctx, 2 * FLOATS, 1);
	x1 = tops_input(ctx, FLOATS, 2);
	y = x ? tops_run1(ctx, &softsign_rows, NULL, 0, x, 2 * CHUNK) : NULL;
	y1 = x1 ? tops_run1(ctx, &softsign_rows, NULL, 0, x1, CHUNK) : NULL;
	y2 = x ? tops_run1(ctx, &tops_softsign, NULL, 0, x, 2 * CHUNK) : NULL;
	if (!y || !y1 || !y2)
		bail_out("the tensors: %s", tp_last_error(ctx));

	ok(!tp_policy_computable(ctx->policy, y) &&
	   tp_policy_computable(ctx->policy, y1),
	   "delta at 40%%: y's regeneration (4 of 8 chunks) is too big, y1's (2) is not");
	ok(softsign_of(y2, x, 2 * FLOATS) && tp_policy_computable(ctx->policy, y2),
	   "delta at 40%%: y2, as big but not read back by rows, may be regenerated");
	tp_tensor_free(ctx, y2);

	/* 6 chunks held, 2 free: 4 more need y's room. */
	ret = request(4, &q);
	ok(!ret && y->evicted_pages == 0 && y->resident_pages < y->nr_pages,
	   "delta at 40%%: a request that needs y's room sends y to host swap (%d; %zu pages evicted, %zu resident)",
	   ret, y->evicted_pages, y->resident_pages);
	if (q)
		tp_tensor_free(ctx, q);
	ok(softsign_of(y, x, 2 * FLOATS) && softsign_of(y1, x1, FLOATS),
	   "delta at 40%%: y comes back from host swap intact");

	ok(!tp_ctl_set(ctx, "policy.director", "evict"),
	   "policy.director = evict at run time");
	tp_policy_sync_conf(ctx->policy);
	ok(tp_policy_computable(ctx->policy, y),
	   "evict at 40%%: the baseline's rule, y may be regenerated");
	ret = request(4, &q);
	tp_stats_get(ctx, &st);
	ok(!ret && y->evicted_pages == y->nr_pages,
	   "evict at 40%%: the same request evicts y (%d, %zu of %zu pages evicted, %llu evictions)",
	   ret, y->evicted_pages, y->nr_pages,
	   (unsigned long long)st.evictions);
	if (q)
		tp_tensor_free(ctx, q);
	ok(softsign_of(y, x, 2 * FLOATS) && softsign_of(y1, x1, FLOATS),
	   "evict at 40%%: y comes back regenerated, bit for bit");

	ok(!tp_ctl_set(ctx, "policy.director", "delta") &&
	   !tp_ctl_set(ctx, "policy.regen_max", "100") &&
	   tp_policy_computable(ctx->policy, y),
	   "delta at 100%%: y may be regenerated");

	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, y1);
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, x1);
	tp_ctx_destroy(ctx);

	/* 4.5 chunks in, 4.5 out: 36864 of 65536 bytes. */
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=64K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.rescue=0,"
			    "policy.filter=lru,policy.director=delta");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x = tops_input(ctx, 9 * FLOATS / 2, 3);
	y = x ? tops_run1(ctx, &softsign_rows, NULL, 0, x, 9 * CHUNK / 2) :
		NULL;
	if (!y)
		bail_out("the tensors: %s", tp_last_error(ctx));
	ok(!tp_policy_computable(ctx->policy, y) &&
	   softsign_of(y, x, 9 * FLOATS / 2),
	   "delta at the default: a regeneration holding 56%% of the budget is too big");
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
	return exit_status();
}
