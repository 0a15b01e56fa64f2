/* SPDX-License-Identifier: MIT */
/*
 * Regenerations whose operands do not fit whole, host backend with data,
 * 4 KiB chunks, contents checked bit for bit:
 *
 *  - z = addrows(x, y) evicted, x and y in host swap, 8 chunks each, in
 *    20, a tensor of 5 chunks held beside: z's replay cannot hold x and y
 *    whole (16 of the 15 chunks left), so it runs in parts, x and y streaming
 *    from host swap a part's rows at a time. Reading z gives what it
 *    held, and x and y are left as they were.
 *  - z = addrows(p, q), p = scale(x), q = scale(y), x = gen, y = gen,
 *    8 chunks each, all evicted, in 20: regenerating p and q each holds
 *    the other out (a replay of scale takes 16 chunks, 24 with the other
 *    beside it). Letting the frames' pins go once does not end it (the
 *    one let go is evicted for the other, and regenerated again, 80
 *    times here); from the second time, what the pins held goes to host
 *    swap as it is let go and comes back by a copy, and z's replay
 *    streams p and q. Reading z gives what it held, with a handful of
 *    retries.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage_int.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	4096
#define FLOATS	(CHUNK / 4)
#define N	(8 * FLOATS)

static struct tp_ctx *ctx;
static float zv[N], got[N], xv[N];

/* A host context of @budget, 4 KiB chunks, nothing kept for later. */
static struct tp_ctx *host_ctx(const char *budget, const char *more)
{
	char conf[320];
	struct tp_ctx *c;

	snprintf(conf, sizeof(conf), "vmm.backend=host,vmm.chunk_size=4K,"
		 "pager.budget=%s,pager.slab_fraction=0,pager.range_cache=0,"
		 "pager.rescue=0,pager.high_watermark=100%s", budget, more);
	c = tp_ctx_create(conf);
	if (!c)
		bail_out("tp_ctx_create: %s", strerror(errno));
	return c;
}

/* gen(@seed): N floats lineage can regenerate. */
static struct tp_tensor *gen(uint32_t seed)
{
	struct tops_gen_params gp = { seed, N };
	struct tp_tensor *t = NULL;
	size_t bytes = N * sizeof(float);

	if (tp_op_run(ctx, &tops_gen, &gp, sizeof(gp), NULL, 0, &t, &bytes, 1))
		bail_out("gen: %s", tp_last_error(ctx));
	return t;
}

static struct tp_tensor *addrows(struct tp_tensor *a, struct tp_tensor *b)
{
	struct tp_tensor *in[2] = { a, b }, *out = NULL;
	size_t bytes = N * sizeof(float);

	if (tp_op_run(ctx, &tops_addrows, NULL, 0, in, 2, &out, &bytes, 1))
		bail_out("addrows: %s", tp_last_error(ctx));
	return out;
}

/* Whether @t reads back as @want, bit for bit. */
static bool reads_as(struct tp_tensor *t, const float *want)
{
	int ret = tp_tensor_read(ctx, t, 0, got, sizeof(got));

	if (ret)
		diag("reading tensor %llu: %s (%s)", (unsigned long long)t->id,
		     tp_strerror(ret), tp_last_error(ctx));
	return !ret && !memcmp(got, want, sizeof(got));
}

static void inputs_in_swap(void)
{
	struct tp_tensor *x, *y, *z, *held;
	struct tp_stats st0, st;
	bool same;

	/*
	 * Reloads, not replays, bring x and y back (DELTA's director would
	 * rather replay gen, which costs nothing, than copy).
	 */
	ctx = host_ctx("80K", ",policy.director=offload,policy.split=on");
	x = gen(1);
	y = gen(2);
	z = addrows(x, y);
	held = tp_tensor_create(ctx, 5 * CHUNK, 0);
	/* x and y whole in host swap (the parts evicted the rows read). */
	if (tp_tensor_read(ctx, z, 0, zv, sizeof(zv)) ||
	    tp_tensor_evict(ctx, z) ||
	    tp_tensor_read(ctx, x, 0, xv, sizeof(xv)) ||
	    tp_tensor_read(ctx, y, 0, got, sizeof(got)) ||
	    tp_tensor_offload(ctx, x) || tp_tensor_offload(ctx, y) ||
	    tp_pager_swapped_pages(x) != x->nr_pages ||
	    tp_pager_swapped_pages(y) != y->nr_pages || !held ||
	    !tp_tensor_acquire(ctx, held, TP_WRITE))
		bail_out("setting up: %s", tp_last_error(ctx));
	tp_stats_get(ctx, &st0);
	same = reads_as(z, zv);
	tp_stats_get(ctx, &st);
	ok(same, "z, whose replay cannot hold x and y whole, reads back bit for bit (%s)",
	   same ? "ok" : tp_last_error(ctx));
	ok(st.recomputes == st0.recomputes + 1 &&
	   st.split_runs == st0.split_runs + 1 &&
	   st.split_parts - st0.split_parts >= 2,
	   "one replay, in %llu parts",
	   (unsigned long long)(st.split_parts - st0.split_parts));
	ok(st.phys_peak <= st.budget_bytes, "within the budget");
	ok(reads_as(x, xv) && !x->pins && !y->pins && !z->pins &&
	   !x->rows_held && !y->rows_held,
	   "x reads as it was; nothing left pinned or held by rows");
	tp_tensor_release(ctx, held);
	tp_ctx_destroy(ctx);
}

static void frames_hold_each_other_out(void)
{
	struct tops_scale_params sp = { 0.75f, -1.5f };
	struct tp_tensor *x, *y, *p, *q, *z;
	struct tp_stats st0, st;
	uint64_t drops;
	bool same;

	ctx = host_ctx("80K", "");
	/* Made so that z's first run fits: p in host swap for it. */
	x = gen(3);
	p = tops_run1(ctx, &tops_scale, &sp, sizeof(sp), x, N * sizeof(float));
	if (!p || tp_tensor_offload(ctx, p) || tp_tensor_evict(ctx, x))
		bail_out("p: %s", tp_last_error(ctx));
	y = gen(4);
	q = tops_run1(ctx, &tops_scale, &sp, sizeof(sp), y, N * sizeof(float));
	if (!q || tp_tensor_evict(ctx, y))
		bail_out("q: %s", tp_last_error(ctx));
	z = addrows(p, q);
	if (tp_tensor_read(ctx, z, 0, zv, sizeof(zv)) ||
	    tp_tensor_evict(ctx, z) || tp_tensor_evict(ctx, p) ||
	    tp_tensor_evict(ctx, q))
		bail_out("setting up: %s", tp_last_error(ctx));
	tp_stats_get(ctx, &st0);
	drops = ctx->lineage->st.pin_drops;
	same = reads_as(z, zv);
	drops = ctx->lineage->st.pin_drops - drops;
	tp_stats_get(ctx, &st);
	ok(same, "z = addrows(scale(x), scale(y)), all evicted, reads back bit for bit (%s)",
	   same ? "ok" : tp_last_error(ctx));
	ok(drops <= 8, "the frames let their pins go %llu times (the bound is 256)",
	   (unsigned long long)drops);
	ok(st.phys_peak <= st.budget_bytes && !p->pins && !q->pins &&
	   !z->pins, "within the budget; nothing left pinned");
	tp_ctx_destroy(ctx);
}

int main(void)
{
	plan_tests(7);
	inputs_in_swap();
	frames_hold_each_other_out();
	return exit_status();
}
