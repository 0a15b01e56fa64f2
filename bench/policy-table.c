// SPDX-License-Identifier: MIT
/*
 * bench/policy-table: the policy comparison of tpager-sim, as tables.
 *
 *   policy-table [--chunk-size B] [--no-sweep] [--no-plan | --plan-only]
 *                [TRACE...]
 *   policy-table --dtr [--chunk-size B] [LOG...]
 *
 * Default: the shipped traces (the .trace files of traces/ in $top_srcdir,
 * . or ..), or the TRACEs named (a path, or the start of a shipped
 * trace's name: "vgg16"). For each trace, each policy of the comparison on chunks (dtr,
 * lru, greedy, msps, delta, overlap/delta-overlap) and on the contiguous pool
 * (coop, delta), under 75/50/35/25 % of the trace's peak of live bytes:
 * extra time over the unconstrained replay in the same mode, or why it
 * did not fit; then the minimum budget (Coop's metric: from 100 % down in
 * steps of 5 % until a run fails, or up from 100 % until one fits, then
 * down from there in steps of 1 % until a run fails, then by halves to
 * 0.1 %) and
 * the fragmentation rate of the run at that minimum (Coop §4.2; 0 on
 * chunks). Then the planned comparison (not with --no-plan; alone with
 * --plan-only): TSPLIT's planner (policy.plan = tsplit) beside the
 * dynamic policy it falls back to, measured over PLAN_PASSES iterations
 * after PLAN_WARMUP (a plan needs a recorded iteration that followed
 * another), on the sim's default driver costs and on the H200 profile:
 * extra time at 75/50/35/25 %, the minimum budget, and what the plan did
 * at 50 % (victims and split runs it chose, choices it left to the
 * filter and director, iterations it stopped holding in). Driver costs are the sim's
 * defaults, charged per 2 MiB granule as on a GPU; copies at the sim's
 * default link bandwidth; prefetch on. The three shipped traces take
 * about 40 s of CPU (a minute on a busy 2-core machine); name one trace
 * ("policy-table vgg16") or give --no-sweep for less.
 *
 * --dtr: DTR's recorded logs (the .log.gz files of
 * $top_srcdir/../shared/traces/dtr, or the LOGs named) under budget ratios of their unconstrained peak,
 * beside DTR's own reference figures (dtr-log-format.md):
 *
 * Table 1, recompute only, DTR's semantics: remap cost 0, no offload, no
 * prefetch, eviction on demand (watermarks at 100 %), runs stopped past
 * an overhead of 2.0 ("thr"). Overhead = (compute + recompute) / compute.
 *
 * Table 2, beyond DTR: offload over a 12 GB/s link (the PCIe 3.0 of the
 * recording machine) and prefetch, with the library's watermarks,
 * measured after OFFLOAD_WARMUP passes (a steady state). DTR's
 * overhead counts recompute only, so each cell also gives the time
 * overhead (virtual time against the unconstrained replay), which counts
 * waiting on copies too.
 *
 * A bench program, past the usual length: its tables share the option
 * parsing, the run loop and the printers.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpager.h"
#include "trace/replay.h"
#include "trace/sweep.h"

static const double ratios[] = { 0.2, 0.3, 0.5, 0.7, 0.9 };
#define NR_RATIOS (sizeof(ratios) / sizeof(ratios[0]))

struct policy {
	const char *filter, *director;
	const char *extra;	/* more options, and the row's suffix */
	const char *suffix;
};

static const struct policy recompute_only[] = {
	{ "dtr", "evict" }, { "lru", "evict" }, { "greedy", "evict" },
	{ "msps", "evict" }, { "delta", "evict" },
};

static const struct policy with_offload[] = {
	{ "dtr", "evict" }, { "delta", "offload" }, { "delta", "delta" },
	{ "delta", "delta-overlap" }, { "dtr", "delta-overlap" },
	{ "overlap", "delta-overlap" },
	{ "overlap", "delta-overlap", "policy.writeback=on", "+wb" },
	{ "overlap", "delta-overlap", "policy.writeback=auto", "+wb=auto" },
};

/*
 * Passes before the measured one with offload: the prefetcher learns the
 * iteration from the first, and policy.writeback=auto times the next
 * three (one without, one to settle, one with) before it decides.
 */
#define OFFLOAD_WARMUP	4

/* DTR's simulator, h_DTR (dtr-log-format.md); 0: not given. */
static const struct {
	const char *prefix;
	double h[NR_RATIOS];
} reference[] = {
	{ "resnet32", { 1.37, 1.18, 1.11, 1.05, 1.01 } },
	{ "transformer", { 1.35, 1.12, 1.06, 1.03, 1.01 } },
};

static uint64_t chunk_size;

/*
 * A budget that does not fit is a cell of the table, not an error to
 * print: the library's messages are kept, and shown only with a failure
 * that is not a verdict.
 */
static char last_log[512];

static void keep_log(enum tp_log_level level, const char *msg, void *priv)
{
	if (level <= TP_LOG_ERROR)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void print_reference(const char *path)
{
	for (size_t i = 0; i < sizeof(reference) / sizeof(reference[0]); i++) {
		if (strncmp(base_name(path), reference[i].prefix,
			    strlen(reference[i].prefix)))
			continue;
		printf("  %-29s", "DTR's simulator (h_DTR)");
		for (size_t k = 0; k < NR_RATIOS; k++)
			printf(" %13.2f", reference[i].h[k]);
		printf("\n");
	}
}

static int cell(const struct tp_trace *t, uint64_t peak,
		const struct policy *p, double ratio, bool offload,
		uint64_t base_ns, char *buf, size_t len, double *speed)
{
	struct tp_replay_opts o = {
		.budget_bytes = (uint64_t)((double)peak * ratio),
		.chunk_size = chunk_size,
		.filter = p->filter,
		.director = p->director,
		.prefetch = offload,
		/* a steady state (OFFLOAD_WARMUP) */
		.warmup = offload ? OFFLOAD_WARMUP : 0,
		.bandwidth = offload ? 12 : 0,
		.remap_ns = 0,
		.thrash_limit = TP_REPLAY_DTR_THRASH,
		.extra = offload ? p->extra :
			 "pager.high_watermark=100,pager.low_watermark=100",
	};
	struct tp_replay_result r;
	int ret;

	ret = tp_replay_run(t, &o, &r);
	if (ret || r.status == TP_REPLAY_ERROR) {
		snprintf(buf, len, "err");
		fprintf(stderr, "policy-table: %s/%s at %.1f: %s\n",
			p->filter, p->director, ratio, r.error);
		return ret ? ret : r.err;
	}
	if (r.wall_s > 0)
		*speed = r.ops / r.wall_s;
	if (r.status == TP_REPLAY_OOM)
		snprintf(buf, len, "OOM");
	else if (r.status == TP_REPLAY_THRASH)
		snprintf(buf, len, "thr");
	else if (offload)
		snprintf(buf, len, "%.3f/%.3f", tp_replay_overhead(&r),
			 base_ns ? (double)r.time_ns / (double)base_ns : 0.0);
	else
		snprintf(buf, len, "%.3f", tp_replay_overhead(&r));
	return 0;
}

static int table(const struct tp_trace *t, const char *path,
		 const struct tp_trace_summary *s, const struct policy *pol,
		 size_t n_pol, bool offload)
{
	struct tp_replay_opts uo = {
		.chunk_size = chunk_size, .prefetch = 0, .remap_ns = 0,
	};
	struct tp_replay_result u;
	double speed = 0;
	int ret;

	ret = tp_replay_run(t, &uo, &u);
	if (ret || u.status != TP_REPLAY_OK) {
		fprintf(stderr, "policy-table: %s: unconstrained replay: %s\n",
			path, u.error);
		return ret ? ret : -EIO;
	}
	printf("\n%s — %s\n", base_name(path), offload ?
	       "offload at 12 GB/s + prefetch (overhead / time overhead)" :
	       "recompute only (overhead; thr = past 2.0, OOM = did not fit)");
	printf("  peak %llu bytes, %llu ops, compute %.3f ms, chunk %llu\n",
	       (unsigned long long)s->peak_bytes,
	       (unsigned long long)u.ops, s->compute_ns / 1e6,
	       (unsigned long long)tp_replay_chunk(t, &uo));
	printf("  %-29s", "policy \\ budget ratio");
	for (size_t k = 0; k < NR_RATIOS; k++)
		printf(" %13.1f", ratios[k]);
	printf("\n");
	for (size_t i = 0; i < n_pol; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s/%s%s", pol[i].filter,
			 pol[i].director, pol[i].suffix ? pol[i].suffix : "");
		printf("  %-29s", name);
		for (size_t k = 0; k < NR_RATIOS; k++) {
			char buf[32];

			cell(t, s->peak_bytes, &pol[i], ratios[k], offload,
			     u.time_ns, buf, sizeof(buf), &speed);
			printf(" %13s", buf);
			fflush(stdout);
		}
		printf("\n");
	}
	print_reference(path);
	printf("  replay speed of the last run: %.0f ops/s\n", speed);
	return 0;
}

/* Load @path (any format, gzip or not) and account its peak into @s. */
static int load(const char *path, struct tp_trace **t,
		struct tp_trace_summary *s)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace_error err;
	char msg[512];
	int ret;

	*t = NULL;
	ret = tp_trace_load(path, &fmt, t, &err);
	if (ret) {
		fprintf(stderr, "policy-table: %s\n",
			tp_trace_error_str(&err, msg, sizeof(msg)));
		return ret;
	}
	ret = tp_trace_peak(*t, s);
	if (ret) {
		tp_trace_free(*t);
		*t = NULL;
	}
	return ret;
}

static int run_log(const char *path)
{
	struct tp_trace_summary s;
	struct tp_trace *t;
	int ret;

	ret = load(path, &t, &s);
	if (!ret)
		ret = table(t, path, &s, recompute_only,
			    sizeof(recompute_only) / sizeof(recompute_only[0]),
			    false);
	if (!ret)
		ret = table(t, path, &s, with_offload,
			    sizeof(with_offload) / sizeof(with_offload[0]),
			    true);
	tp_trace_free(t);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The files ending in @suffix in the first of @dirs that opens, sorted,
 * as malloc'd paths in @paths (at most @max). Return: how many, or -1
 * when no directory opened.
 */
static int list_dir(const char *const *dirs, size_t n_dirs,
		    const char *suffix, char **paths, size_t max)
{
	size_t n = 0, sl = strlen(suffix);
	const char *dir = NULL;
	struct dirent *e;
	DIR *d = NULL;

	for (size_t i = 0; i < n_dirs && !d; i++) {
		d = opendir(dirs[i]);
		if (d)
			dir = dirs[i];
	}
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max) {
		size_t l = strlen(e->d_name);

		if (l <= sl || strcmp(e->d_name + l - sl, suffix))
			continue;
		paths[n] = malloc(strlen(dir) + l + 2);
		if (!paths[n])
			break;
		sprintf(paths[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(paths, n, sizeof(paths[0]), cmp_str);
	return (int)n;
}

/* Every *.log.gz in the first directory of the default places found. */
static int run_default(void)
{
	const char *top = getenv("top_srcdir");
	char dir0[4096], *paths[64];
	const char *dirs[] = { dir0, "../shared/traces/dtr",
			       "../../shared/traces/dtr" };
	int n, ret = 0;

	snprintf(dir0, sizeof(dir0), "%s/../shared/traces/dtr",
		 top ? top : ".");
	n = list_dir(dirs, 3, ".log.gz", paths, 64);
	if (n < 0) {
		fprintf(stderr, "policy-table: no DTR logs found; give their paths\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if (!ret)
			ret = run_log(paths[i]);
		free(paths[i]);
	}
	return ret ? 1 : 0;
}

/* --- the shipped traces: issue 8's comparison ----------------------- */

/* A row: a policy on a pool. */
struct row {
	const char *filter, *director;
	bool contiguous;
};

/*
 * DTR, LRU and GREEDY are recompute-only in their papers; Capuchin's
 * MSPS chooses swap or recompute per tensor, as the delta director does;
 * Coop evicts. The delta-overlap policy is the overlap filter (its
 * victims ranked by the cost the director's way out exposes, over the
 * bytes freed and the time to their predicted next use) with the
 * delta-overlap director. The last two rows are the same as two above them
 * but on the fragmenting pool: what remapping buys.
 */
static const struct row rows[] = {
	{ "dtr", "evict", false },
	{ "lru", "evict", false },
	{ "greedy", "evict", false },
	{ "msps", "delta", false },
	{ "delta", "delta", false },
	{ "overlap", "delta-overlap", false },
	{ "coop", "evict", true },
	{ "delta", "delta", true },
};
#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

static const unsigned table_pct[] = { 75, 50, 35, 25 };
#define NR_PCT (sizeof(table_pct) / sizeof(table_pct[0]))

#define NR_STEPS	(1000 / TP_SWEEP_STEP)

/* Recomputation past this many times the compute of the iteration is
 * stopped as thrashing (trace/replay.h). */
#define TRACE_THRASH	TP_REPLAY_TRACE_THRASH

static bool no_sweep;

static void trace_opts(struct tp_replay_opts *o, const struct row *rw,
		       uint64_t budget)
{
	memset(o, 0, sizeof(*o));
	o->budget_bytes = budget;
	o->chunk_size = chunk_size;
	o->filter = rw->filter;
	o->director = rw->director;
	o->prefetch = -1;
	o->remap_ns = -1;
	o->thrash_limit = budget ? TRACE_THRASH : 0;
	o->extra = rw->contiguous ?
		   "vmm.sim.driver_granule=2M,vmm.mode=contiguous" :
		   "vmm.sim.driver_granule=2M";
}

/* One run of a row; what a cell and the sweep need of it. */
struct outcome {
	bool done;
	enum tp_replay_status status;
	uint64_t time_ns;
	uint64_t frag_ppm;
};

static int run_row(const struct tp_trace *t, const struct row *rw,
		   uint64_t budget, struct outcome *out, double *speed)
{
	struct tp_replay_opts o;
	struct tp_replay_result r;
	int ret;

	trace_opts(&o, rw, budget);
	ret = tp_replay_run(t, &o, &r);
	if (ret || r.status == TP_REPLAY_ERROR) {
		fprintf(stderr, "policy-table: %s/%s%s at %llu bytes: %s (%s)\n",
			rw->filter, rw->director,
			rw->contiguous ? " (contiguous)" : "",
			(unsigned long long)budget, r.error, last_log);
		return ret ? ret : (r.err ? r.err : -EIO);
	}
	out->done = true;
	out->status = r.status;
	out->time_ns = r.time_ns;
	out->frag_ppm = r.fragmentation_ppm;
	if (r.wall_s > 0)
		*speed = (double)r.ops / r.wall_s;
	return 0;
}

static void print_cell(const struct outcome *c, uint64_t base_ns)
{
	char buf[32];

	if (c->status == TP_REPLAY_OOM)
		snprintf(buf, sizeof(buf), "OOM");
	else if (c->status == TP_REPLAY_THRASH)
		snprintf(buf, sizeof(buf), "thr");
	else
		snprintf(buf, sizeof(buf), "%.1f%%", base_ns ?
			 100.0 * ((double)c->time_ns - (double)base_ns) /
			 (double)base_ns : 0.0);
	printf(" %9s", buf);
}

struct sweep_row {
	const struct tp_trace *t;
	const struct row *rw;
	uint64_t peak;
	struct outcome *at;	/* by 5 % step up to 100 %: the cells reuse them */
	uint64_t frag;		/* of the last run that fit: at the minimum */
	double *speed;
};

/* tp_sweep()'s run: one run of the row at @tenths of the peak. */
static int sweep_run(void *priv, int tenths)
{
	struct sweep_row *s = priv;
	struct outcome scratch = { 0 }, *c = &scratch;
	int ret;

	if (tenths <= 1000 && !(tenths % TP_SWEEP_STEP))
		c = &s->at[tenths / TP_SWEEP_STEP];
	ret = run_row(s->t, s->rw, tp_sweep_bytes(s->peak, tenths), c,
		      s->speed);
	if (ret)
		return ret < 0 ? ret : -EIO;
	if (c->status != TP_REPLAY_OK)
		return 0;
	s->frag = c->frag_ppm;
	return 1;
}

static int trace_row(const struct tp_trace *t, uint64_t peak,
		     const struct row *rw, uint64_t base_ns, double *speed)
{
	struct outcome at[NR_STEPS + 1] = { 0 };	/* by percent / step */
	struct sweep_row s = { .t = t, .rw = rw, .peak = peak, .at = at,
			       .speed = speed };
	int min = -1, ret;
	char name[48];

	snprintf(name, sizeof(name), "%s/%s", rw->filter, rw->director);
	printf("  %-20s %-10s", name, rw->contiguous ? "contiguous" :
	       "chunked");
	fflush(stdout);
	/* Coop's minimum budget, as tpager-sim --sweep finds it. */
	if (!no_sweep) {
		struct tp_replay_opts o;

		trace_opts(&o, rw, 0);
		ret = tp_sweep(peak, tp_replay_chunk(t, &o), sweep_run, &s,
			       &min);
		if (ret)
			return ret;
	}
	for (size_t k = 0; k < NR_PCT; k++) {
		struct outcome *c = &at[table_pct[k] * 10 / TP_SWEEP_STEP];

		if (!c->done) {
			ret = run_row(t, rw, (uint64_t)((double)peak *
							table_pct[k] / 100.0),
				      c, speed);
			if (ret)
				return ret;
		}
		print_cell(c, base_ns);
	}
	if (no_sweep)
		printf(" %6s %8s\n", "-", "-");
	else if (min < 0)
		printf("  >%3d%% %8s\n", TP_SWEEP_MAX / 10, "-");
	else
		printf(" %6s %8.4f\n", tp_sweep_text(min, name, sizeof(name)),
		       s.frag / 1e6);
	return 0;
}

/* --- planned against dynamic (policy.plan) --------------------------- */

/*
 * Passes before the measured ones: the first is recorded, the second
 * follows the record and is planned from; the plan runs from the third.
 * The dynamic rows get the same passes (the prefetcher learns from them
 * too), so that the two compare on the same measured iterations.
 */
#define PLAN_WARMUP	2
#define PLAN_PASSES	2

static bool no_plan, plan_only;

/* A planned row: a policy, with or without the plan, on a profile. */
struct plan_row {
	const char *filter, *director;
	bool plan;
};

/*
 * The dynamic policies the plan falls back to, each beside itself with
 * the plan: the overlap filter and the delta-overlap director (the
 * default pairing that splits), and DELTA's own pair.
 */
static const struct plan_row plan_rows[] = {
	{ "overlap", "delta-overlap", false },
	{ "overlap", "delta-overlap", true },
	{ "delta", "delta", false },
	{ "delta", "delta", true },
};
#define NR_PLAN_ROWS (sizeof(plan_rows) / sizeof(plan_rows[0]))

static const char *const plan_profiles[] = { "custom", "h200" };
#define NR_PLAN_PROFILES \
	(sizeof(plan_profiles) / sizeof(plan_profiles[0]))

struct plan_cell {
	bool done;
	struct tp_replay_result r;
};

static int plan_run(const struct tp_trace *t, const struct plan_row *pr,
		    const char *profile, uint64_t budget, struct plan_cell *c)
{
	struct tp_replay_opts o;
	char extra[256];
	int ret;

	memset(&o, 0, sizeof(o));
	snprintf(extra, sizeof(extra),
		 "vmm.sim.driver_granule=2M,vmm.sim.profile=%s%s", profile,
		 pr && pr->plan ? ",policy.plan=tsplit" : "");
	o.budget_bytes = budget;
	o.chunk_size = chunk_size;
	o.filter = pr ? pr->filter : NULL;
	o.director = pr ? pr->director : NULL;
	o.prefetch = -1;
	o.remap_ns = -1;
	o.thrash_limit = budget ? TRACE_THRASH : 0;
	o.warmup = PLAN_WARMUP;
	o.iterations = PLAN_PASSES;
	o.extra = extra;
	ret = tp_replay_run(t, &o, &c->r);
	if (ret || c->r.status == TP_REPLAY_ERROR) {
		fprintf(stderr, "policy-table: %s/%s%s on %s at %llu bytes: %s (%s)\n",
			pr ? pr->filter : "-", pr ? pr->director : "-",
			pr && pr->plan ? "+plan" : "", profile,
			(unsigned long long)budget, c->r.error, last_log);
		return ret ? ret : (c->r.err ? c->r.err : -EIO);
	}
	c->done = true;
	return 0;
}

struct plan_sweep {
	const struct tp_trace *t;
	const struct plan_row *pr;
	const char *profile;
	uint64_t peak;
	struct plan_cell *at;	/* by 5 % step up to 100 % */
	uint64_t min_time;	/* of the last run that fit */
};

static int plan_sweep_run(void *priv, int tenths)
{
	struct plan_sweep *s = priv;
	struct plan_cell scratch = { 0 }, *c = &scratch;
	int ret;

	if (tenths <= 1000 && !(tenths % TP_SWEEP_STEP))
		c = &s->at[tenths / TP_SWEEP_STEP];
	ret = plan_run(s->t, s->pr, s->profile,
		       tp_sweep_bytes(s->peak, tenths), c);
	if (ret)
		return ret < 0 ? ret : -EIO;
	if (c->r.status != TP_REPLAY_OK)
		return 0;
	s->min_time = c->r.time_ns;
	return 1;
}

static int plan_table_row(const struct tp_trace *t, uint64_t peak,
			  const struct plan_row *pr, const char *profile,
			  uint64_t base_ns)
{
	struct plan_cell at[NR_STEPS + 1];
	struct plan_sweep s = { .t = t, .pr = pr, .profile = profile,
				.peak = peak, .at = at };
	const struct plan_cell *half = NULL;
	int min = -1, ret;
	char name[64];

	memset(at, 0, sizeof(at));
	snprintf(name, sizeof(name), "%s/%s%s", pr->filter, pr->director,
		 pr->plan ? " +plan" : "");
	printf("  %-28s", name);
	fflush(stdout);
	if (!no_sweep) {
		ret = tp_sweep(peak, tp_replay_chunk(t, &(struct tp_replay_opts){
					.chunk_size = chunk_size }),
			       plan_sweep_run, &s, &min);
		if (ret)
			return ret;
	}
	for (size_t k = 0; k < NR_PCT; k++) {
		struct plan_cell *c = &at[table_pct[k] * 10 / TP_SWEEP_STEP];
		struct outcome o;

		if (!c->done) {
			ret = plan_run(t, pr, profile, (uint64_t)((double)peak *
						table_pct[k] / 100.0), c);
			if (ret)
				return ret;
		}
		if (table_pct[k] == 50)
			half = c;
		o = (struct outcome){ .done = true, .status = c->r.status,
				      .time_ns = c->r.time_ns };
		print_cell(&o, base_ns);
	}
	if (no_sweep)
		printf(" %6s", "-");
	else if (min < 0)
		printf("  >%3d%%", TP_SWEEP_MAX / 10);
	else
		printf(" %6s", tp_sweep_text(min, name, sizeof(name)));
	if (half && half->r.status == TP_REPLAY_OK && pr->plan)
		printf("  %llu/%llu/%llu",
		       (unsigned long long)half->r.plan_hits,
		       (unsigned long long)half->r.plan_fallbacks,
		       (unsigned long long)half->r.plan_breaks);
	printf("\n");
	return 0;
}

static int plan_table(const struct tp_trace *t, const char *path,
		      const struct tp_trace_summary *s)
{
	int ret = 0;

	printf("\n%s: planned (policy.plan=tsplit) against dynamic; %d passes measured after %d\n",
	       base_name(path), PLAN_PASSES, PLAN_WARMUP);
	printf("  extra time over the unconstrained replay on the same profile; budget %% of the peak;\n"
	       "  plan: hits/fallbacks/breaks at 50%%\n");
	for (size_t p = 0; p < NR_PLAN_PROFILES && !ret; p++) {
		struct plan_cell u = { 0 };

		ret = plan_run(t, NULL, plan_profiles[p], 0, &u);
		if (ret)
			break;
		printf("  profile %s: unconstrained %.3f ms\n", plan_profiles[p],
		       u.r.time_ns / 1e6);
		printf("  %-28s", "policy");
		for (size_t k = 0; k < NR_PCT; k++)
			printf(" %8u%%", table_pct[k]);
		printf(" %6s  %s\n", "min", "plan");
		for (size_t i = 0; i < NR_PLAN_ROWS && !ret; i++)
			ret = plan_table_row(t, s->peak_bytes, &plan_rows[i],
					     plan_profiles[p], u.r.time_ns);
	}
	return ret;
}

static int run_trace(const char *path)
{
	struct tp_replay_result u[2];
	struct tp_trace_summary s;
	struct tp_trace *t;
	double speed = 0;
	int ret;

	ret = load(path, &t, &s);
	if (ret)
		return ret;
	/* The unconstrained replay of each pool, the base of extra time. */
	for (int m = 0; m < 2; m++) {
		struct row free_row = { NULL, NULL, m == 1 };
		struct tp_replay_opts o;

		trace_opts(&o, &free_row, 0);
		ret = tp_replay_run(t, &o, &u[m]);
		if (ret || u[m].status != TP_REPLAY_OK) {
			fprintf(stderr, "policy-table: %s: unconstrained replay: %s\n",
				path, u[m].error);
			ret = ret ? ret : -EIO;
			goto out;
		}
	}
	if (plan_only)
		goto planned;
	printf("\n%s: peak %.3f GB of live tensors, %llu ops, chunk %llu\n",
	       base_name(path), s.peak_bytes / 1e9,
	       (unsigned long long)u[0].ops,
	       (unsigned long long)u[0].chunk_size);
	printf("  unconstrained: %.3f ms on chunks, %.3f ms contiguous\n",
	       u[0].time_ns / 1e6, u[1].time_ns / 1e6);
	printf("  extra time over the unconstrained replay of the same pool; budget %% of the peak\n");
	printf("  %-20s %-10s", "policy", "pool");
	for (size_t k = 0; k < NR_PCT; k++)
		printf(" %8u%%", table_pct[k]);
	printf(" %6s %8s\n", "min", "frag@min");
	for (size_t i = 0; i < NR_ROWS && !ret; i++)
		ret = trace_row(t, s.peak_bytes, &rows[i],
				u[rows[i].contiguous].time_ns, &speed);
	if (!ret)
		printf("  replay speed of the last run: %.0f ops/s\n", speed);
planned:
	if (!ret && !no_plan)
		ret = plan_table(t, path, &s);
out:
	tp_trace_free(t);
	return ret;
}

/* The shipped traces' directory, or NULL. */
static const char *const *trace_dirs(size_t *n)
{
	static char dir0[4096];
	static const char *dirs[] = { dir0, "traces", "../traces" };
	const char *top = getenv("top_srcdir");

	snprintf(dir0, sizeof(dir0), "%s/traces", top ? top : ".");
	*n = 3;
	return dirs;
}

/* A path as given, else the shipped trace whose name starts with @arg. */
static int run_named(const char *arg)
{
	const char *const *dirs;
	char *paths[64];
	size_t nd, hits = 0, hit = 0;
	int n, ret;

	if (!access(arg, R_OK))
		return run_trace(arg);
	dirs = trace_dirs(&nd);
	n = list_dir(dirs, nd, ".trace", paths, 64);
	for (int i = 0; i < n; i++)
		if (!strncmp(base_name(paths[i]), arg, strlen(arg)))
			hit = (size_t)i, hits++;
	if (hits == 1) {
		ret = run_trace(paths[hit]);
	} else {
		fprintf(stderr, "policy-table: '%s': %s\n", arg, hits ?
			"names more than one shipped trace" :
			"no such file or shipped trace");
		ret = -ENOENT;
	}
	for (int i = 0; i < n; i++)
		free(paths[i]);
	return ret;
}

static int run_shipped(void)
{
	const char *const *dirs;
	char *paths[64];
	size_t nd;
	int n, ret = 0;

	dirs = trace_dirs(&nd);
	n = list_dir(dirs, nd, ".trace", paths, 64);
	if (n <= 0) {
		fprintf(stderr, "policy-table: no shipped traces found (set top_srcdir or give their paths)\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if (!ret)
			ret = run_trace(paths[i]);
		free(paths[i]);
	}
	return ret ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: policy-table [--chunk-size B] [--no-sweep] [--no-plan | --plan-only] [TRACE...]\n"
		   "       policy-table --dtr [--chunk-size B] [LOG...]\n");
}

int main(int argc, char **argv)
{
	bool dtr = false;
	int i, ret = 0;

	tp_set_log(keep_log, NULL);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--dtr")) {
			dtr = true;
		} else if (!strcmp(argv[i], "--no-sweep")) {
			no_sweep = true;
		} else if (!strcmp(argv[i], "--no-plan")) {
			no_plan = true;
		} else if (!strcmp(argv[i], "--plan-only")) {
			plan_only = true;
		} else if (!strcmp(argv[i], "--chunk-size") && i + 1 < argc) {
			chunk_size = strtoull(argv[++i], NULL, 0);
			if (chunk_size < 4096 || (chunk_size & (chunk_size - 1))) {
				fprintf(stderr, "policy-table: --chunk-size: a power of two of at least 4096\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (dtr) {
		printf("tpager policy table: DTR logs replayed on the sim backend, remap cost 0\n");
		if (i == argc)
			return run_default();
		for (; i < argc && !ret; i++)
			ret = run_log(argv[i]);
		return ret ? 1 : 0;
	}
	printf("tpager policy table: shipped traces on the sim backend; driver costs per 2 MiB,\n"
	       "OOM = did not fit, thr = recompute passed %.0fx the compute; min = smallest budget\n"
	       "that fits, in steps of %d%% then %d%% below the last that fit, then by halves\n"
	       "to 0.1%%; frag@min = fragmentation rate there (Coop 4.2)\n",
	       TRACE_THRASH, TP_SWEEP_STEP / 10, TP_SWEEP_FINE / 10);
	if (i == argc)
		return run_shipped();
	for (; i < argc && !ret; i++)
		ret = run_named(argv[i]);
	return ret ? 1 : 0;
}
