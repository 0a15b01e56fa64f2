// SPDX-License-Identifier: MIT
/*
 * Replay of traces on the sim backend (trace/replay.c): synthetic DTR logs
 * with peaks, overheads and counts worked out by hand, verdicts (fits,
 * OOM, thrash), determinism, repeated iterations, and random traces whose
 * replay must never map more than the budget.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "trace/replay.h"

#define CH 4096u	/* every size below is a whole number of chunks */

/* Evict on demand only, as DTR does (no early release at a watermark). */
#define ON_DEMAND "pager.high_watermark=100,pager.low_watermark=100"

/*
 * A chain with a skip connection, sizes in chunks:
 *   a (1, constant); b = f(a) 4, 1000 ns; c = g(b) 4, 2000; d = h(c) 4,
 *   3000; c released; e = k(b, d) 1, 500.
 * Live chunks: a+b+c = 9, +d = 13 (the peak), -c = 9, +e = 10.
 * Under 10 chunks, d finds 9 used and needs 4: the only candidate is b
 * (a is a constant, c an input of h), evicted; e then needs b back: one
 * recompute of f (1000 ns) and 1+4+4+1 = 10 chunks. Overhead 7500/6500.
 */
static const char chain_log[] =
	"{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"a\"}\n"
	"{\"ARGS\":[\"a\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"b\"],\"TIME\":\"1000\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"b\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\"}\n"
	"{\"ARGS\":[\"b\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"RESULT\":[\"c\"],\"TIME\":\"2000\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"c\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\"}\n"
	"{\"ARGS\":[\"c\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"h\",\"RESULT\":[\"d\"],\"TIME\":\"3000\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"d\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"d\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"c\"}\n"
	"{\"ANNOTATION\":\"BACKWARD\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"ARGS\":[\"b\",\"d\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"k\",\"RESULT\":[\"e\"],\"TIME\":\"500\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"e\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"e\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"d\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"e\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n";

/*
 * Every instruction: a two-result call with a view, a view of a result
 * and a MUTATE of its base, RELEASE of a name never defined, a call with
 * two fresh results, COPY, COPY_FROM, and a MUTATE of two arguments
 * (constants: the optimizer step). Sizes in chunks: p 2, m 2, in 1;
 * split: a 1 (b views in); conv: y 4 (yv views y); grad: g 2, h 1.
 * Live: 5, 6, 10, then 13 at grad (the peak). Compute: 100 + 1000 + 10 +
 * 200 + 500 + 0 (COPY_FROM has no time) + 300 = 2110 ns in 7 ops, run as
 * 7 tp_op_run calls: the view-only op t makes none, the two-index MUTATE
 * makes two.
 */
static const char all_log[] =
	"{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"p\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"p\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"m\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"m\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"in\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"in\"}\n"
	"{\"ARGS\":[\"in\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"split\",\"RESULT\":[\"a\",\"b\"],\"TIME\":\"100\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"a\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"b\"}\n"
	"{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\"}\n"
	"{\"ARGS\":[\"a\",\"p\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"conv\",\"RESULT\":[\"y\"],\"TIME\":\"1000\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"y\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}\n"
	"{\"ARGS\":[\"y\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"t\",\"RESULT\":[\"yv\"],\"TIME\":\"10\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"yv\"}\n"
	"{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"yv\"}\n"
	"{\"ARGS\":[\"y\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0],\"NAME\":\"relu_\",\"TIME\":\"200\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"nosuch\"}\n"
	"{\"ANNOTATION\":\"BACKWARD\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"ARGS\":[\"yv\",\"a\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"grad\",\"RESULT\":[\"g\",\"h\"],\"TIME\":\"500\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"g\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"g\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"h\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"h\"}\n"
	"{\"DST\":\"h2\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"h\"}\n"
	"{\"DST\":\"a\",\"INSTRUCTION\":\"COPY_FROM\",\"SRC\":\"h2\"}\n"
	"{\"ARGS\":[\"p\",\"m\",\"g\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0,1],\"NAME\":\"sgd\",\"TIME\":\"300\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"y\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"yv\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"h\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"h2\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"g\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"in\"}\n";

/*
 * The example of dtr-log-format.md in whole chunks: x1 4, x2 1, x3 2
 * (x4 views it, then relu_ overwrites it in place). DTR's peak: 7 chunks.
 */
static const char mutate_log[] =
	"{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16384\",\"NAME\":\"x1\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x2\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"x2\"}\n"
	"{\"ARGS\":[\"x1\",\"x2\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"mm\",\"RESULT\":[\"x3\"],\"TIME\":\"52000\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"x3\"}\n"
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x3\"}\n"
	"{\"ARGS\":[\"x3\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"RESULT\":[\"x4\"],\"TIME\":\"900\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"x4\"}\n"
	"{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x4\"}\n"
	"{\"ARGS\":[\"x4\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0],\"NAME\":\"relu_\",\"TIME\":\"7000\"}\n"
	"{\"DST\":\"x5\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"x4\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x3\"}\n"
	"{\"ANNOTATION\":\"BACKWARD\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x4\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x5\"}\n";

static struct tp_trace *parse(const char *log, const char *name)
{
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	char msg[512];
	int ret;

	ret = tp_trace_parse_dtr(log, strlen(log), name, &t, &err);
	if (ret)
		diag("%s", tp_trace_error_str(&err, msg, sizeof(msg)));
	return t;
}

static struct tp_replay_opts dtr_opts(uint64_t budget)
{
	struct tp_replay_opts o = {
		.budget_bytes = budget,
		.chunk_size = CH,
		.filter = "dtr",
		.director = "evict",
		.prefetch = 0,
		.remap_ns = 0,
		.extra = ON_DEMAND,
	};

	return o;
}

static bool same_result(const struct tp_replay_result *a,
			const struct tp_replay_result *b)
{
	struct tp_replay_result x = *a, y = *b;

	/* Real time and policy latency are the host's, not the replay's. */
	x.wall_s = y.wall_s = 0;
	x.policy_ns = y.policy_ns = 0;
	return !memcmp(&x, &y, sizeof(x));
}

static void test_chain(void)
{
	int rc;
	struct tp_trace *t = parse(chain_log, "chain");
	struct tp_trace_summary s;
	struct tp_replay_opts o;
	struct tp_replay_result r, r2;

	ok(t != NULL, "chain: the log parses");
	if (!t) {
		skip(19, "no trace");
		return;
	}
	ok_rc(tp_trace_peak(t, &s), "chain: accounting");
	ok(s.peak_bytes == 13 * CH && s.compute_ns == 6500,
	   "chain: DTR peak 13 chunks, compute 6500 ns (got %llu, %llu)",
	   (unsigned long long)s.peak_bytes, (unsigned long long)s.compute_ns);

	o = dtr_opts(0);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK,
	   "chain: replays without a limit");
	ok(r.held_peak == 13 * CH && r.phys_peak >= r.held_peak,
	   "chain: the peak tensors held is DTR's, %llu (mapped %llu)",
	   (unsigned long long)r.held_peak, (unsigned long long)r.phys_peak);
	ok(r.ops == 4 && r.op_runs == 4 && r.compute_ns == 6500 &&
	   r.time_ns == 6500 && r.evictions == 0 && r.recomputes == 0,
	   "chain: 4 ops in 6500 ns, nothing leaves (%llu ops, %llu runs, %llu ns, %llu evictions)",
	   (unsigned long long)r.ops, (unsigned long long)r.op_runs,
	   (unsigned long long)r.time_ns, (unsigned long long)r.evictions);

	o = dtr_opts(10 * CH);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK,
	   "chain: fits in 10 chunks");
	ok(r.budget_bytes == 10 * CH && r.phys_peak == 10 * CH,
	   "chain: peak %llu is the budget", (unsigned long long)r.phys_peak);
	ok(r.evictions == 1 && r.recomputes == 1 && r.recompute_ns == 1000,
	   "chain: b evicted once, recomputed once for 1000 ns (%llu, %llu, %llu)",
	   (unsigned long long)r.evictions, (unsigned long long)r.recomputes,
	   (unsigned long long)r.recompute_ns);
	ok(fabs(tp_replay_overhead(&r) - 7500.0 / 6500.0) < 1e-12 &&
	   r.time_ns == 7500,
	   "chain: overhead 7500/6500, time 7500 ns (%.6f, %llu)",
	   tp_replay_overhead(&r), (unsigned long long)r.time_ns);
	rc = tp_replay_run(t, &o, &r2);
	ok(!rc && same_result(&r, &r2),
	   "chain: a second replay gives the same figures");

	o = dtr_opts(9 * CH);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OOM &&
	   r.err == -ENOMEM && r.error[0],
	   "chain: 9 chunks do not fit (%s)", r.error);
	ok(r.phys_peak <= 9 * CH, "chain: not even on the way out of room");

	o = dtr_opts(10 * CH);
	o.thrash_limit = 1.1;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_THRASH,
	   "chain: overhead 1.154 passes a thrash limit of 1.1");
	o.thrash_limit = 1.2;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK,
	   "chain: and not one of 1.2");

	/*
	 * In 10 chunks the pass takes 7500 ns against 6500 unconstrained,
	 * its recompute 1000 ns. DTR's rule with 2.0 lets it fit; the rule
	 * of tpager's traces (thrash_base_ns) stops it when the pass may
	 * take no more than 1.1 times its unconstrained 6500 ns (limit 2.0
	 * times a base of 3575), and lets it be at 1.2 times.
	 */
	o = dtr_opts(10 * CH);
	o.thrash_limit = 2.0;
	o.thrash_base_ns = 3575;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_THRASH &&
	   strstr(r.error, "unconstrained time"),
	   "chain: 7500 ns against 1.1 times 6500 unconstrained: thrash (%s)",
	   r.error);
	o.thrash_base_ns = 3900;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK && r.time_ns == 7500,
	   "chain: and not against 1.2 times (%s)", r.error);

	/*
	 * The wall-time bound: against a base no replay can keep within,
	 * the replay ends as thrashing after its first op, saying so; with
	 * one it keeps, it fits as before.
	 */
	o = dtr_opts(10 * CH);
	o.wall_limit = 10;
	o.wall_base_s = 1e-12;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_THRASH && r.by_wall &&
	   strstr(r.error, "unconstrained wall time") && r.ops < 4,
	   "chain: past 10 times a wall base of 1 ps: thrash after %llu ops (%s)",
	   (unsigned long long)r.ops, r.error);
	o.wall_base_s = 1000;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK && !r.by_wall && r.time_ns == 7500,
	   "chain: and within 10 times 1000 s, it fits (%s)", r.error);

	/*
	 * With room to spare, the range cache keeps a freed range mapped
	 * for the next tensor of its size; across iterations that shows as
	 * a chunk more than DTR's peak. Without the cache, the peak is the
	 * same as one iteration's: each repeat's tensors are freed.
	 */
	o = dtr_opts(0);
	o.extra = ON_DEMAND ",pager.range_cache=0";
	o.iterations = 3;
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK &&
	   r.ops == 12 && r.compute_ns == 3 * 6500 && r.time_ns == 3 * 6500,
	   "chain: three iterations replay 12 ops in 19500 ns (%d %s, %llu ops, %llu ns)",
	   rc, r.error, (unsigned long long)r.ops, (unsigned long long)r.time_ns);
	ok(r.phys_peak == 13 * CH, "chain: with the same peak (fresh tensors, none leaked), %llu",
	   (unsigned long long)r.phys_peak);

	o = dtr_opts(0);
	o.remap_ns = 2000000000;
	rc = tp_replay_run(t, &o, &r);
	ok(rc == -EINVAL && r.status == TP_REPLAY_ERROR,
	   "chain: an out-of-range remap cost is refused");
	tp_trace_free(t);
}

static void test_all_instructions(void)
{
	int rc;
	struct tp_trace *t = parse(all_log, "all");
	struct tp_trace_summary s;
	struct tp_replay_opts o;
	struct tp_replay_result r, r2;

	ok(t != NULL, "all: the log parses");
	if (!t) {
		skip(6, "no trace");
		return;
	}
	ok_rc(tp_trace_peak(t, &s), "all: accounting");
	ok(s.peak_bytes == 13 * CH && s.compute_ns == 2110,
	   "all: DTR peak 13 chunks, compute 2110 ns (got %llu, %llu)",
	   (unsigned long long)s.peak_bytes, (unsigned long long)s.compute_ns);
	o = dtr_opts(0);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK &&
	   r.ops == 7 && r.op_runs == 7 && r.compute_ns == 2110 &&
	   r.time_ns == 2110 && tp_replay_overhead(&r) == 1.0,
	   "all: 7 ops, 7 runs, 2110 ns, overhead 1 (%llu, %llu, %llu)",
	   (unsigned long long)r.ops, (unsigned long long)r.op_runs,
	   (unsigned long long)r.time_ns);
	rc = tp_replay_run(t, &o, &r2);
	ok(!rc && same_result(&r, &r2),
	   "all: a second replay gives the same figures");
	ok(r.phys_peak == 13 * CH, "all: physical peak is DTR's, %llu",
	   (unsigned long long)r.phys_peak);
	/*
	 * At grad, p, m and in are constants, and y (under yv) and a are
	 * its inputs: with 12 chunks nothing can be evicted to make g and h.
	 */
	o = dtr_opts(12 * CH);
	rc = tp_replay_run(t, &o, &r2);
	ok(!rc && r2.status == TP_REPLAY_OOM && r2.phys_peak <= 12 * CH,
	   "all: 12 chunks do not fit, peak %llu within the budget",
	   (unsigned long long)r2.phys_peak);
	tp_trace_free(t);
}

static void test_mutate(void)
{
	int rc;
	struct tp_trace *t = parse(mutate_log, "mutate");
	struct tp_trace_summary s;
	struct tp_replay_opts o;
	struct tp_replay_result r;

	ok(t != NULL && !tp_trace_peak(t, &s) && s.peak_bytes == 7 * CH &&
	   s.compute_ns == 59900, "mutate: DTR peak 7 chunks, 59900 ns");
	if (!t) {
		skip(2, "no trace");
		return;
	}
	o = dtr_opts(0);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK &&
	   r.time_ns == 59900 && r.ops == 3 && r.op_runs == 2,
	   "mutate: replays 3 ops (2 runs, the view is charged) in 59900 ns");
	/*
	 * DTR overwrites x3 in place with no memory; lineage's recomputable
	 * in-place gives the new version the old one's pages and leaves the
	 * old version EVICTED without backing it, so the peaks are equal.
	 */
	ok(r.phys_peak == 7 * CH,
	   "mutate: an in-place write needs no memory beyond DTR's peak (%llu)",
	   (unsigned long long)r.phys_peak);
	tp_trace_free(t);
}

/* A random program of ops over live tensors, built with the trace API. */
static struct tp_trace *random_trace(unsigned seed, unsigned n_ops)
{
	struct tp_trace *t = tp_trace_new();
	uint32_t live[64], n_live = 0, id;

	srand(seed);
	if (!t)
		return NULL;
	if (tp_trace_add_mark(t, TP_TRACE_EV_ITER))
		goto err;
	for (unsigned i = 0; i < 4; i++) {
		if (tp_trace_add_tensor(t, (1 + rand() % 4) * CH,
					TP_TRACE_PARAM, TP_TRACE_NONE, &id))
			goto err;
		live[n_live++] = id;
	}
	/* Warm-up: ops whose output is dropped before the region. */
	for (unsigned i = 0; i < 5; i++) {
		struct tp_trace_out_spec out = {
			.size = CH, .flags = TP_TRACE_COMPUTABLE,
			.kind = TP_TRACE_OUT_FRESH,
		};

		if (tp_trace_add_op(t, "warm", 4, 777, &live[i % 4], 1, &out,
				    1, &id) || tp_trace_add_free(t, id))
			goto err;
	}
	if (tp_trace_add_mark(t, TP_TRACE_EV_MEASURE_BEGIN))
		goto err;
	for (unsigned i = 0; i < n_ops; i++) {
		uint32_t args[3];
		struct tp_trace_out_spec out = {
			.size = (1 + rand() % 8) * CH,
			.flags = TP_TRACE_ACTIVATION | TP_TRACE_COMPUTABLE,
			.kind = TP_TRACE_OUT_FRESH,
		};
		unsigned n_args = 1 + rand() % 3;

		for (unsigned k = 0; k < n_args; k++)
			args[k] = live[rand() % n_live];
		if (tp_trace_add_op(t, "op", 2, 100 + rand() % 5000, args,
				    n_args, &out, 1, &id))
			goto err;
		live[n_live++] = id;
		/* Keep the 4 constants; drop some activations. */
		while (n_live > 4 && (n_live == 64 || rand() % 3 == 0)) {
			unsigned k = 4 + rand() % (n_live - 4);

			if (tp_trace_add_free(t, live[k]))
				goto err;
			live[k] = live[--n_live];
		}
	}
	return t;
err:
	tp_trace_free(t);
	return NULL;
}

/*
 * The same program written as tpager-trace(5) text and read back through
 * the loader replays to the same figures.
 */
static void test_text_round_trip(const struct tp_trace *t)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace *back = NULL;
	struct tp_trace_error err;
	struct tp_replay_opts o = dtr_opts(0);
	struct tp_replay_result a, b;
	char path[] = "/tmp/tp-sim-replay-XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	rc = f ? tp_trace_write(t, f) : -EIO;
	if (f)
		fclose(f);
	if (!rc)
		rc = tp_trace_load(path, &fmt, &back, &err);
	ok(!rc && fmt == TP_TRACE_FMT_TEXT, "random: read back as tpager-trace text");
	if (fd >= 0)
		unlink(path);
	if (rc) {
		skip(1, "no trace");
		return;
	}
	o.budget_bytes = 0;
	rc = tp_replay_run(t, &o, &a);
	if (!rc)
		rc = tp_replay_run(back, &o, &b);
	ok(!rc && same_result(&a, &b) && a.ops == 300,
	   "random: the text replays like the original, warm-up not counted (%llu ops)",
	   (unsigned long long)b.ops);
	tp_trace_free(back);
}

static void test_random(unsigned seed)
{
	static const char *const policies[][2] = {
		{ "dtr", "evict" }, { "lru", "evict" }, { "delta", "delta" },
	};
	static const double ratios[] = { 1.0, 0.6, 0.4, 0.25, 0.15 };
	struct tp_trace *t = random_trace(seed, 300);
	struct tp_trace_summary s;
	unsigned fits = 0, over = 0, errors = 0, runs = 0;

	ok(t != NULL && !tp_trace_peak(t, &s), "random: trace built (seed %u)",
	   seed);
	if (!t) {
		skip(5, "no trace");
		return;
	}
	for (unsigned p = 0; p < 3; p++) {
		for (unsigned k = 0; k < 5; k++) {
			struct tp_replay_opts o = dtr_opts((uint64_t)(s.peak_bytes * ratios[k]) / CH * CH);
			struct tp_replay_result r;

			o.filter = policies[p][0];
			o.director = policies[p][1];
			o.extra = NULL;		/* the library's watermarks */
			runs++;
			if (tp_replay_run(t, &o, &r) || r.status == TP_REPLAY_ERROR) {
				diag("%s/%s at %.2f: %s", o.filter, o.director,
				     ratios[k], r.error);
				errors++;
				continue;
			}
			if (r.phys_peak > o.budget_bytes)
				over++;
			if (r.status == TP_REPLAY_OK) {
				fits++;
				if (r.ops != 300 || r.compute_ns != s.compute_ns)
					errors++;
			}
		}
	}
	diag("random: %u of %u replays fit", fits, runs);
	test_text_round_trip(t);
	ok(!errors, "random: every replay reaches a verdict with all ops run");
	ok(!over, "random: no replay maps more than its budget");
	ok(fits >= 3, "random: every policy fits at the unconstrained peak");
	tp_trace_free(t);
}

int main(void)
{
	const char *env = getenv("TP_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) :
			  (unsigned)time(NULL);

	plan_tests(22 + 7 + 3 + 6);
	diag("seed %u (set TP_SEED to repeat)", seed);
	test_chain();
	test_all_instructions();
	test_mutate();
	test_random(seed);
	return exit_status();
}
