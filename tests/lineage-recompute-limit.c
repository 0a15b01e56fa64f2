/* SPDX-License-Identifier: MIT */
/*
 * lineage.recompute_limit: DTR's thrash rule inside a regeneration. A
 * chain of K ops, each output freed once the next is made, its end
 * evicted and read: the read replays K ops of 1 µs each. Under a limit of
 * K/2 µs the read fails with TP_EWORK, naming the key, before the walk
 * ends, and leaves the tensor as it was (evicted); without a limit, or
 * once the iteration that spent it is over, the read succeeds.
 *
 * And a replay stopped that way by tpager-sim's --thrash is a thrash
 * verdict, not an error: DTR's Inception-v4 log at 0.2 of its peak under
 * dtr/evict, recompute only, ran for minutes in one regeneration whose
 * room-making evicted what it read next (when the logs are beside the
 * tree).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"
#include "trace/replay.h"

#define CHUNK	(64u << 10)
#define K	32

static struct tp_tensor *run(struct tp_ctx *ctx, struct tp_tensor *a)
{
	return tops_nop_run(ctx, a, NULL, CHUNK);
}

static void chain(void)
{
	struct tp_tensor *x0, *c, *y;
	struct tp_ctx *ctx;
	char v[32];

	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,pager.budget=64M,pager.rescue=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	ok(!tp_ctl_get(ctx, "lineage.recompute_limit", v, sizeof(v)) &&
	   !strcmp(v, "0"), "lineage.recompute_limit defaults to %s", v);
	x0 = tops_written(ctx, CHUNK);
	if (tp_iteration_begin(ctx))
		bail_out("tp_iteration_begin");
	c = run(ctx, x0);
	for (unsigned i = 1; i < K; i++) {
		struct tp_tensor *n = run(ctx, c);

		tp_tensor_free(ctx, c);
		c = n;
	}
	y = c;
	if (tp_tensor_evict(ctx, y))
		bail_out("tp_tensor_evict");
	snprintf(v, sizeof(v), "%u", K / 2 * 1000);
	if (tp_ctl_set(ctx, "lineage.recompute_limit", v))
		bail_out("tp_ctl_set");
	ok(!tp_tensor_acquire(ctx, y, TP_READ) &&
	   strstr(tp_last_error(ctx), "lineage.recompute_limit") &&
	   tp_pager_has_evicted(y),
	   "a read replaying %u ops under a limit of %u of them fails: %s",
	   K, K / 2, tp_last_error(ctx));
	if (tp_iteration_end(ctx) || tp_iteration_begin(ctx))
		bail_out("iteration");
	ok(tp_tensor_acquire(ctx, y, TP_READ) != NULL,
	   "in the next iteration it is read (%s)", tp_last_error(ctx));
	tp_tensor_release(ctx, y);
	tp_iteration_end(ctx);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x0);
	tp_ctx_destroy(ctx);
}

static void inception(void)
{
	const char *dir = getenv("top_srcdir");
	char path[4096];
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace_summary s;
	struct tp_trace_error err;
	struct tp_replay_result r;
	struct tp_trace *t = NULL;
	struct tp_replay_opts o = {
		.filter = "dtr",
		.director = "evict",
		.prefetch = 0,
		.remap_ns = 0,
		.thrash_limit = 2.0,
		.extra = "pager.high_watermark=100,pager.low_watermark=100",
	};

	snprintf(path, sizeof(path), "%s/../shared/traces/dtr/%s",
		 dir ? dir : "..",
		 "inceptionv4-64-10000000000.0-2020-10-1-10-55-0-default.log.gz");
	if (access(path, R_OK) || tp_trace_load(path, &fmt, &t, &err)) {
		skip(1, "no %s", path);
		return;
	}
	tp_trace_peak(t, &s);
	o.budget_bytes = (uint64_t)(0.2 * (double)s.peak_bytes);
	ok(!tp_replay_run(t, &o, &r) && r.status == TP_REPLAY_THRASH &&
	   r.err == 0, "Inception-v4 at 0.2, dtr/evict, recompute only: thr (%s)",
	   r.error);
	tp_trace_free(t);
}

int main(void)
{
	plan_tests(4);
	chain();
	inception();
	return exit_status();
}
