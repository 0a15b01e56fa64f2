/* SPDX-License-Identifier: MIT */
/*
 * Long chains of ops over tiny tensors under a budget that evicts, every
 * intermediate freed as it goes (fake deletion): the last tensor, evicted,
 * regenerates by replaying the whole chain on lineage's work stack, not
 * the C stack. 100,000 ops on the sim backend (no data: counts only) and
 * on the host backend with the final value checked bit for bit (the host
 * backend keeps one kernel mapping per reserved range, of which the kernel
 * allows 65,530 by default: a fake-deleted tensor whose memory is gone
 * keeps no range). lineage.max_recompute_depth stops a chain
 * deeper than it with TP_EDEPTH and leaves everything as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define LONG	100000
#define SHORT	3000
#define NF	4		/* floats per tensor */

static struct tp_ctx *ctx;

/* x_{i+1} = softsign(x_i) * 1.5 + 0.5, alternating two ops. */
static int step(struct tp_tensor *x, unsigned i, struct tp_tensor **y)
{
	static const struct tops_scale_params sp = { 1.5f, 0.5f };
	size_t bytes = NF * sizeof(float);

	if (i & 1)
		return tp_op_run(ctx, &tops_scale, &sp, sizeof(sp), &x, 1, y,
				 &bytes, 1);
	return tp_op_run(ctx, &tops_softsign, NULL, 0, &x, 1, y, &bytes, 1);
}

static void ref_chain(const float *x0, unsigned n, float *out)
{
	unsigned i, j;

	memcpy(out, x0, NF * sizeof(float));
	for (i = 0; i < n; i++)
		for (j = 0; j < NF; j++)
			out[j] = (i & 1) ? tops_ref_scale(out[j], 1.5f, 0.5f) :
					   tops_ref_softsign(out[j]);
}

/* Build a chain of @n ops from @x0, freeing each intermediate. */
static struct tp_tensor *chain(struct tp_tensor *x0, unsigned n)
{
	struct tp_tensor *x = x0, *y;
	unsigned i;
	int ret;

	for (i = 0; i < n; i++) {
		y = NULL;
		ret = step(x, i, &y);
		if (ret) {
			diag("step %u: %s (%s)", i, tp_strerror(ret),
			     tp_last_error(ctx));
			return NULL;
		}
		if (x != x0 && tp_tensor_free(ctx, x))
			return NULL;
		x = y;
	}
	return x;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct tp_tensor *sim_input(void)
{
	struct tp_tensor *t = tp_tensor_create(ctx, NF * sizeof(float), 0);

	if (t && (!tp_tensor_acquire(ctx, t, TP_WRITE) ||
		  tp_tensor_release(ctx, t))) {
		tp_tensor_free(ctx, t);
		return NULL;
	}
	return t;
}

/* Chain @n ops, evict the end and regenerate it: 5 test points. */
static void long_chain(const char *what, struct tp_tensor *x0, unsigned n,
		       const float *x0v)
{
	struct tp_lineage_stats st0, st;
	float want[NF], got[NF];
	uint64_t t0, t1, t2;
	struct tp_tensor *xl;
	void *addr;

	t0 = now_ns();
	xl = chain(x0, n);
	t1 = now_ns();
	ok(xl != NULL, "%s: a chain of %u ops", what, n);
	if (!xl) {
		skip(4, "no chain");
		return;
	}
	tp_lineage_get_stats(ctx->lineage, &st0);
	ok(st0.fake_deleted == n - 1 && st0.records == n,
	   "%s: %u intermediates fake-deleted, %u records kept (%llu, %llu)",
	   what, n - 1, n, (unsigned long long)st0.fake_deleted,
	   (unsigned long long)st0.records);
	ok_rc(tp_tensor_evict(ctx, xl), "%s: evict the last tensor", what);
	if (x0v) {
		int ret;

		t2 = now_ns();
		ret = tp_tensor_read(ctx, xl, 0, got, sizeof(got));
		diag("%s: %u ops run in %.1f ms, regenerated in %.1f ms", what, n,
		     (t1 - t0) / 1e6, (now_ns() - t2) / 1e6);

		ref_chain(x0v, n, want);
		ok(!ret && !memcmp(got, want, sizeof(got)),
		   "%s: regenerated bit for bit: %.9g %.9g %.9g %.9g", what,
		   got[0], got[1], got[2], got[3]);
	} else {
		addr = tp_tensor_acquire(ctx, xl, TP_READ);
		ok(addr && !tp_tensor_release(ctx, xl) && !tp_pager_has_evicted(xl),
		   "%s: regenerated (%s)", what, addr ? "" : tp_last_error(ctx));
	}
	tp_lineage_get_stats(ctx->lineage, &st);
	ok(st.replays - st0.replays == n && st.max_depth == n &&
	   !tops_replay_mismatches,
	   "%s: by %u replays on a work stack %u deep (%llu, %llu), each "
	   "known to the pager as one (%lu not)", what, n, n,
	   (unsigned long long)(st.replays - st0.replays),
	   (unsigned long long)st.max_depth, tops_replay_mismatches);
	tp_tensor_free(ctx, xl);
}

int main(void)
{
	struct tp_lineage_stats st;
	struct tp_tensor *x0, *xs;
	float x0v[NF], want[NF], got[NF];
	struct tp_stats ps;
	int ret;

	plan_tests(21);
	/* sim: 4K chunks, every tensor paged, 32 chunks of budget. */
	ctx = tp_ctx_create("vmm.backend=sim,pager.rescue=0,vmm.chunk_size=4K,pager.budget=128K,"
			    "pager.host_budget=32K,pager.slab_fraction=0,pager.range_cache=0");
	if (!ctx)
		bail_out("tp_ctx_create(sim): %s", strerror(errno));
	x0 = sim_input();
	ok(x0 != NULL, "sim: input");
	long_chain("sim", x0, LONG, NULL);
	tp_lineage_get_stats(ctx->lineage, &st);
	ok(st.records == 0 && st.fake_deleted == 0,
	   "sim: the whole chain is released without recursion");
	tp_tensor_free(ctx, x0);
	tp_ctx_destroy(ctx);

	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=4K,pager.budget=128K,"
			    "pager.host_budget=32K,pager.slab_fraction=0,pager.range_cache=0");
	if (!ctx)
		bail_out("tp_ctx_create(host): %s", strerror(errno));
	x0 = tops_input(ctx, NF, 7);
	ok(x0 && !tp_tensor_read(ctx, x0, 0, x0v, sizeof(x0v)), "host: input");
	long_chain("host", x0, LONG, x0v);
	tp_stats_get(ctx, &ps);
	ok(ps.recomputes >= LONG, "host: the pager counted them (%llu, %llu ns)",
	   (unsigned long long)ps.recomputes,
	   (unsigned long long)ps.recompute_ns);
	ok(ps.ranges_reserved < 1000,
	   "host: fake-deleted tensors keep no range (%llu reserved)",
	   (unsigned long long)ps.ranges_reserved);
	diag("budget %llu chunks of %llu bytes, peak %llu chunks",
	     (unsigned long long)(ps.budget_bytes / ps.chunk_size),
	     (unsigned long long)ps.chunk_size,
	     (unsigned long long)ps.chunks_peak);

	/* The depth bound. */
	xs = chain(x0, SHORT);
	ok(xs != NULL, "a chain of %d", SHORT);
	ok_rc(tp_ctl_set(ctx, "lineage.max_recompute_depth", "1000"),
	      "lineage.max_recompute_depth = 1000");
	ok_rc(tp_tensor_evict(ctx, xs), "evict its end");
	ret = tp_tensor_read(ctx, xs, 0, got, sizeof(got));
	ok(ret == -TP_EDEPTH && strstr(tp_last_error(ctx), "lineage.max_recompute_depth"),
	   "TP_EDEPTH: %s", tp_last_error(ctx));
	ref_chain(x0v, SHORT, want);
	ok(!tp_ctl_set(ctx, "lineage.max_recompute_depth", "5000") &&
	   !tp_tensor_read(ctx, xs, 0, got, sizeof(got)) &&
	   !memcmp(got, want, sizeof(got)), "with 5000 it regenerates, same bits");
	tp_tensor_free(ctx, xs);
	tp_lineage_get_stats(ctx->lineage, &st);
	ok(st.records == 0 && st.fake_deleted == 0, "host: no record left");
	tp_tensor_free(ctx, x0);
	tp_ctx_destroy(ctx);
	return exit_status();
}
