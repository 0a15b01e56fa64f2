/* SPDX-License-Identifier: MIT */
/*
 * Regenerations that must end, and end in work proportional to what they
 * regenerate.
 *
 * Joins: a chain of K blocks, each block's input p read by two branches,
 * a2(a1(p)) and b(p), whose outputs a fourth op joins (Inception's
 * blocks, narrowed to two), run as two iterations on sim under
 * overlap/delta-overlap. The program frees what it is done with; lineage
 * keeps it. In the second iteration, with the first one's record, the
 * end of the chain is evicted and read again: the walk regenerates the
 * 4K + 1 tensors once each, making room from tensors the program made
 * and never reads again, not from what the walk is about to read. Taken
 * for a tensor no one uses again, p left as soon as a1 had read it, to
 * make room for a2, and b regenerated it again with its whole ancestry:
 * 2^K replays.
 *
 * Inception: DTR's Inception-v4 log at 0.4 with overlap/delta-overlap,
 * 12 GB/s, four warm-up passes and policy.writeback=auto, which ran for
 * longer than anyone waited, ends within ten times its unconstrained
 * replay (when the logs are beside the tree).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"
#include "trace/replay.h"

#define CHUNK	(64u << 10)
#define BLOCKS	12
#define JUNK	100		/* one-chunk tensors made and never read */

static void put(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (tp_tensor_free(ctx, t))
		bail_out("tp_tensor_free");
}

/*
 * One iteration: the chain, then its end evicted and read again. Return
 * the ops replayed for that read.
 */
static uint64_t iteration(struct tp_ctx *ctx, struct tp_tensor *x0, int *rc)
{
	struct tp_tensor *junk[JUNK], *p = x0, *y;
	struct tp_stats s0, s1;

	if (tp_iteration_begin(ctx))
		bail_out("tp_iteration_begin");
	for (unsigned i = 0; i < JUNK; i++)
		junk[i] = tops_nop_run(ctx, x0, NULL, CHUNK);
	for (unsigned k = 0; k < BLOCKS; k++) {
		struct tp_tensor *a1 = tops_nop_run(ctx, p, NULL, 2 * CHUNK);
		struct tp_tensor *a2 = tops_nop_run(ctx, a1, NULL, 2 * CHUNK);
		struct tp_tensor *b = tops_nop_run(ctx, p, NULL, 2 * CHUNK);
		/* the largest: the first a blind tie-break sends away */
		struct tp_tensor *n = tops_nop_run(ctx, a2, b, 3 * CHUNK);

		put(ctx, a1);
		put(ctx, a2);
		put(ctx, b);
		if (p != x0)
			put(ctx, p);
		p = n;
	}
	y = tops_nop_run(ctx, p, NULL, 2 * CHUNK);
	put(ctx, p);
	if (tp_tensor_evict(ctx, y))
		bail_out("tp_tensor_evict");
	tp_stats_get(ctx, &s0);
	*rc = tp_tensor_acquire(ctx, y, TP_READ) ? 0 : -1;
	if (!*rc)
		tp_tensor_release(ctx, y);
	tp_stats_get(ctx, &s1);
	put(ctx, y);
	for (unsigned i = 0; i < JUNK; i++)
		put(ctx, junk[i]);
	if (tp_iteration_end(ctx))
		bail_out("tp_iteration_end");
	return s1.recomputes - s0.recomputes;
}

static void joins(void)
{
	char opts[512];
	struct tp_tensor *x0;
	struct tp_ctx *ctx;
	uint64_t replays[2];
	int rc[2];

	/* x0, the junk, one block's five tensors and y at most */
	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,pager.rescue=0,vmm.chunk_size=64K,pager.budget=%u,"
		 "policy.filter=overlap,policy.director=delta-overlap,"
		 "vmm.sim.map_ns=0,vmm.sim.set_access_ns=0,vmm.sim.unmap_ns=0",
		 (3 + JUNK + 12 + 2) * CHUNK);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x0 = tops_written(ctx, 3 * CHUNK);
	for (unsigned i = 0; i < 2; i++)
		replays[i] = iteration(ctx, x0, &rc[i]);
	ok(!rc[0] && replays[0] == 4 * BLOCKS + 1,
	   "joins, no record: the end of %u blocks regenerated in %llu replays",
	   BLOCKS, (unsigned long long)replays[0]);
	ok(!rc[1] && replays[1] == 4 * BLOCKS + 1,
	   "joins, with the record: regenerated in %llu replays (4K + 1 = %u)",
	   (unsigned long long)replays[1], 4 * BLOCKS + 1);
	tp_ctx_destroy(ctx);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void alarmed(int sig)
{
	static const char msg[] = "Bail out! the replay did not end in time\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void inception(const char *dir)
{
	char path[4096 + 128], why[512];
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace_summary s;
	struct tp_trace_error err;
	struct tp_replay_result r;
	struct tp_replay_opts o = {
		.filter = "overlap",
		.director = "delta-overlap",
		.prefetch = -1,
		.bandwidth = 12,
		.remap_ns = 0,
		.warmup = 4,
		.extra = "vmm.sim.driver_granule=2M,policy.writeback=auto",
	};
	struct tp_trace *t = NULL;
	double t0, free_s, tight_s;
	unsigned limit;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 "inceptionv4-64-10000000000.0-2020-10-1-10-55-0-default.log.gz");
	if (access(path, R_OK) || tp_trace_load(path, &fmt, &t, &err)) {
		if (t == NULL && !access(path, R_OK))
			tp_trace_error_str(&err, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "no %.400s", path);
		skip(2, "%s", why);
		return;
	}
	tp_trace_peak(t, &s);
	t0 = now_s();
	rc = tp_replay_run(t, &o, &r);
	free_s = now_s() - t0;
	ok(!rc && r.status == TP_REPLAY_OK, "inception, no limit: %.3f s",
	   free_s);
	/* Ten times that, and a second for a loaded machine's noise. */
	limit = (unsigned)(10 * free_s) + 1;
	signal(SIGALRM, alarmed);
	alarm(limit + 10);
	o.budget_bytes = (uint64_t)(0.4 * (double)s.peak_bytes);
	o.thrash_limit = 2.0;
	t0 = now_s();
	rc = tp_replay_run(t, &o, &r);
	tight_s = now_s() - t0;
	alarm(0);
	ok(!rc && r.status == TP_REPLAY_OK && tight_s <= 10 * free_s + 1,
	   "inception at 0.4, writeback auto after 4 passes: %s in %.3f s "
	   "(%.1fx)", r.status == TP_REPLAY_OK ? "fits" : r.error, tight_s,
	   tight_s / free_s);
	tp_trace_free(t);
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];

	plan_tests(4);
	joins();
	snprintf(dir, sizeof(dir), "%s/../shared/traces/dtr", top ? top : "..");
	inception(dir);
	return exit_status();
}
