// SPDX-License-Identifier: MIT
/*
 * bench/budget-sweep: whether the default policy can be trusted with the
 * budget knob, on every trace at hand.
 *
 *   budget-sweep [--profile custom|h200|h100] [--warmup N] [--policy F/D]
 *                [--set KEY=VALUE]... [--fine-only | --coarse-only]
 *                [TRACE...]
 *
 * Default: the shipped traces (the .trace files of traces/ in
 * $top_srcdir, . or ..) and DTR's logs (the .log.gz files of
 * $top_srcdir/../shared/traces/dtr); or the TRACEs named (a path, or the
 * start of such a file's name). Each replays on the sim backend as
 * tpager-sim replays it: driver costs per 2 MiB (per handle on a GPU's
 * profile); for a DTR log DTR's thrash rule (recompute past the compute
 * time), and on the custom profile no remap cost; a shipped trace stops
 * as thrashing once it has recomputed nine times its compute or taken ten
 * times its unconstrained time. On a GPU's profile the host issues ahead
 * of the device as training does, on the custom profile it waits for each
 * op, DTR's clock (tp_replay_defaults()).
 *
 * What is measured differs by kind: a shipped trace measures its third
 * iteration (two before it warm the policy's record and the host swap),
 * a DTR log its only one, cold: no record to predict from, host swap
 * pinned as it grows. --warmup N replays each N times more before the
 * measured pass (the DTR logs' steady state: --warmup 2). The default
 * policy's replays go on warming up while policy.tune times filter and
 * director pairs (tpager-sim --warmup auto), so that its measured pass
 * runs the pair it keeps; a baseline at a budget then replays as many
 * times first as the default did there (the nearest budget where it did
 * not run), so that every column's measured pass follows as many.
 *
 * For each trace:
 *
 * - the default policy (the keys' defaults, or --policy) from 100% of
 *   the trace's peak of live bytes down in steps of 1% until a budget
 *   does not fit, and the largest rise of extra time for a budget 1%
 *   larger: a rise above 5% of the extra time at the smaller budget plus
 *   one point is a cliff (a user who raises the budget and sees the step
 *   time grow stops trusting the knob);
 *
 * - at 5% steps, the default beside each baseline (dtr/evict,
 *   msps/delta, delta/delta, lru/evict, greedy/evict on chunks, and
 *   coop/evict on the contiguous pool): the time of each as a multiple
 *   of the unconstrained replay on chunks, '!' where the default is more
 *   than 5% behind the best baseline; the budgets where policy.tune kept
 *   another pair than the default's, and which; then each one's minimum
 *   budget (down from its last 5% step that fit in steps of 1%).
 *
 * The summary gives, per trace, the largest rise against its limit, the
 * mean extra time of the default over the 1% budgets that fit (what a
 * change that moves the cliffs about does on the whole), the budgets
 * where the default is behind (and behind the best baseline on
 * its own, chunked, pool: Coop's pool maps nothing again once made, and
 * is ahead of the chunked one by what remapping costs), and the minimum
 * budgets; and the
 * largest wall time of a replay as a multiple of its unconstrained
 * replay's, on the same pool (the fastest of three; a replay past ten
 * times it, the faster of two), how many replays took more than ten
 * times it, and the largest multiple for each policy. A budgeted replay
 * ends as thrashing once it has taken ten times its unconstrained
 * replay's wall time (tp_replay_opts.wall_limit; run once more before
 * that verdict is taken): those are counted apart. The six traces take
 * a few minutes of one core.
 *
 * A bench program, past the usual length: its sweeps share the option
 * parsing, the replay loop and the printers.
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

/* A column: a policy on a pool. NULL filter and director: the default. */
struct column {
	const char *name;
	const char *filter, *director;
	bool contiguous;
};

static const struct column columns[] = {
	{ "default", NULL, NULL, false },
	{ "dtr/evict", "dtr", "evict", false },
	{ "msps/delta", "msps", "delta", false },
	{ "delta/delta", "delta", "delta", false },
	{ "lru/evict", "lru", "evict", false },
	{ "greedy/evict", "greedy", "evict", false },
	{ "coop/evict", "coop", "evict", true },
};
#define NR_COLS		(sizeof(columns) / sizeof(columns[0]))
#define NR_STEPS	20	/* 5% steps: 100% .. 5% */

/* Behind the best baseline by more than this factor of its time. */
#define BEHIND		1.05
/* A rise of extra time above RISE_REL of it plus RISE_ABS is a cliff. */
#define RISE_REL	0.05
#define RISE_ABS	0.01

static char extra_all[1024];
static const char *profile;
static unsigned warmup;
static char def_filter[32], def_director[32];
static bool fine_only, coarse_only;

/* The library's messages are kept for a failure that is not a verdict. */
static char last_log[512];

static void keep_log(enum tp_log_level level, const char *msg, void *priv)
{
	(void)priv;
	if (level <= TP_LOG_ERROR)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

struct bench_trace {
	const char *path;
	/*
	 * The warm-up passes the default took at each budget (policy.tune
	 * timing pairs), plus one, 0: not run there: a baseline at that
	 * budget runs as many, so that every column's measured pass
	 * follows as many.
	 */
	unsigned warm_at[101];
	struct tp_trace *t;
	struct tp_trace_summary s;
	bool dtr;
	uint64_t base_ns[2];	/* unconstrained: chunks, contiguous */
	double base_wall[2];	/* of the unconstrained replays: chunks,
				 * contiguous */
};

/* One replay's outcome: what a cell needs. */
struct outcome {
	bool done;
	enum tp_replay_status status;
	double time;		/* virtual time / unconstrained on chunks */
	double extra;		/* over the same pool's unconstrained */
	double wall;		/* wall time / unconstrained wall time */
	char tuned[64];		/* the pair policy.tune kept, if another */
};

static double max_wall;
static char max_wall_at[128];
/* Replays past WALL_LIMIT times the unconstrained one's wall time: a
 * replay ends as thrashing there (tp_replay_opts.wall_limit). */
#define WALL_LIMIT	TP_REPLAY_WALL_LIMIT
static unsigned over_wall, by_wall, replays;
static double col_wall[NR_COLS];
/* The first of them, named in the summary. */
#define SLOW_LISTED	16
static char slow_at[SLOW_LISTED][160];

static void opts_for(const struct bench_trace *bt, const struct column *c,
		     uint64_t budget, struct tp_replay_opts *o, char *extra,
		     size_t len)
{
	memset(o, 0, sizeof(*o));
	o->budget_bytes = budget;
	o->filter = c->filter ? c->filter :
		    (def_filter[0] ? def_filter : NULL);
	o->director = c->director ? c->director :
		      (def_director[0] ? def_director : NULL);
	o->prefetch = -1;
	o->warmup = warmup;
	/* the default's measured pass runs the pair policy.tune kept */
	o->warmup_tuned = c == &columns[0];
	/* As tpager-sim, by the trace's kind and the profile. */
	tp_replay_defaults(o, bt->dtr, profile && strcmp(profile, "custom"));
	if (!budget)
		o->thrash_limit = 0;
	else if (!bt->dtr)
		o->thrash_base_ns = bt->base_ns[c->contiguous];
	/* Every budgeted replay within WALL_LIMIT of its own pool's. */
	if (budget && bt->base_wall[c->contiguous] > 0) {
		o->wall_limit = WALL_LIMIT;
		o->wall_base_s = bt->base_wall[c->contiguous];
	}
	snprintf(extra, len, "vmm.sim.driver_granule=2M%s%s%s%s",
		 c->contiguous ? ",vmm.mode=contiguous" : "",
		 profile ? ",vmm.sim.profile=" : "", profile ? profile : "",
		 extra_all);
	o->extra = extra;
}

/*
 * A baseline's warm-up at @pct: the default's there, else at the nearest
 * budget it ran (above first), else --warmup's.
 */
static unsigned warm_for(const struct bench_trace *bt, int pct)
{
	for (int d = 0; d <= 100; d++) {
		if (pct + d <= 100 && bt->warm_at[pct + d])
			return bt->warm_at[pct + d] - 1;
		if (pct - d >= 1 && bt->warm_at[pct - d])
			return bt->warm_at[pct - d] - 1;
	}
	return warmup;
}

static int run(struct bench_trace *bt, const struct column *c, int pct,
	       struct outcome *out)
{
	size_t ci = (size_t)(c - columns);
	struct tp_replay_opts o;
	struct tp_replay_result r;
	char extra[1200];
	/* A replay's own: on its pool (coop's is the contiguous one). */
	double base_wall = bt->base_wall[c->contiguous];
	int ret;

	opts_for(bt, c, tp_sweep_bytes(bt->s.peak_bytes, pct * 10), &o,
		 extra, sizeof(extra));
	if (ci)
		o.warmup = warm_for(bt, pct);
	last_log[0] = 0;
	ret = tp_replay_run(bt->t, &o, &r);
	/* A replay stopped by the paging work bound is a verdict. */
	if (ret == -TP_EWORK || r.err == -TP_EWORK) {
		ret = 0;
		r.status = TP_REPLAY_ERROR;
	} else if (ret || r.status == TP_REPLAY_ERROR) {
		fprintf(stderr, "budget-sweep: %s: %s at %d%%: %s (%s)\n",
			base_name(bt->path), c->name, pct, r.error, last_log);
		return ret ? ret : (r.err ? r.err : -EIO);
	}
	/*
	 * A replay past the wall limit is timed once more and the faster
	 * kept, as the unconstrained one is the fastest of three: on a
	 * shared machine one slow run says more about its load than about
	 * the replay (the same code gave 6 to 38 replays past 10x in four
	 * sweeps on a 2-core VM). The replay is deterministic; only the
	 * wall time can differ.
	 */
	if (base_wall > 0 && (r.by_wall || r.wall_s / base_wall > WALL_LIMIT)) {
		struct tp_replay_result again;

		/* One stopped by the bound is run once more, and its
		 * verdict taken where that run was not. */
		if (!tp_replay_run(bt->t, &o, &again)) {
			if (r.by_wall && !again.by_wall)
				r = again;
			else if (!r.by_wall && again.time_ns == r.time_ns &&
				 again.wall_s < r.wall_s)
				r.wall_s = again.wall_s;
		}
	}
	if (r.by_wall)
		by_wall++;
	out->done = true;
	out->status = r.status;
	out->time = (double)r.time_ns / (double)bt->base_ns[0];
	out->extra = (double)r.time_ns / (double)bt->base_ns[c->contiguous] -
		     1;
	out->wall = base_wall > 0 ? r.wall_s / base_wall : 0;
	if (!ci && pct >= 1 && pct <= 100)
		bt->warm_at[pct] = r.warmup + 1;
	if (r.in_force[0] && strcmp(r.in_force, r.policy))
		snprintf(out->tuned, sizeof(out->tuned), "%s", r.in_force);
	replays++;
	/* One the bound ended said why; past it means not ended. */
	if (out->wall > WALL_LIMIT && !r.by_wall) {
		if (over_wall < SLOW_LISTED)
			snprintf(slow_at[over_wall], sizeof(slow_at[0]),
				 "%s, %s at %d%%: %.1fx", base_name(bt->path),
				 c->name, pct, out->wall);
		over_wall++;
	}
	if (ci < NR_COLS && out->wall > col_wall[ci])
		col_wall[ci] = out->wall;
	if (out->wall > max_wall) {
		max_wall = out->wall;
		snprintf(max_wall_at, sizeof(max_wall_at), "%s, %s at %d%%",
			 base_name(bt->path), c->name, pct);
	}
	return 0;
}

static bool fits(const struct outcome *o)
{
	return o->done && o->status == TP_REPLAY_OK;
}

static const char *cell(const struct outcome *o, char *buf, size_t len)
{
	if (!o->done)
		snprintf(buf, len, "-");
	else if (o->status == TP_REPLAY_OOM)
		snprintf(buf, len, "OOM");
	else if (o->status == TP_REPLAY_THRASH)
		snprintf(buf, len, "thr");
	else if (o->status == TP_REPLAY_ERROR)
		snprintf(buf, len, "work");
	else
		snprintf(buf, len, "%.3f", o->time);
	return buf;
}

/* What the summary keeps of a trace. */
struct verdict {
	const char *name;
	int fine_min;		/* -1: not run */
	double rise, rise_lim;	/* the worst rise against its limit */
	int rise_at;		/* budget below it, -1: none */
	double mean;		/* mean extra time over the budgets that fit */
	int cliffs;		/* rises over their limit */
	int holes;		/* budgets above the minimum that failed */
	int behind;		/* 5% budgets where the default is behind */
	int behind_chunked;	/* ... the best baseline on its own pool */
	int min[NR_COLS];	/* minimum budgets, -1: none fit */
};

/*
 * The default in 1% steps from 100% down, until FINE_MISSES budgets in a
 * row do not fit: the minimum is the smallest that fit, and a budget
 * above it that did not is a cliff of its own (a hole).
 */
#define FINE_MISSES	3

static int fine_sweep(struct bench_trace *bt, struct verdict *v)
{
	struct outcome at[101] = { { 0 } };
	double worst = -1;
	int pct, misses = 0, n, ret;

	for (pct = 100; pct >= 1 && misses < FINE_MISSES; pct--) {
		ret = run(bt, &columns[0], pct, &at[pct]);
		if (ret)
			return ret;
		if (!fits(&at[pct])) {
			misses++;
			continue;
		}
		misses = 0;
		v->fine_min = pct;
	}
	for (pct = v->fine_min, n = 0; pct > 0 && pct <= 100; pct++)
		if (fits(&at[pct])) {
			v->mean += at[pct].extra;
			n++;
		}
	if (n)
		v->mean /= n;
	for (pct = v->fine_min; pct > 0 && pct < 100; pct++) {
		double lo = at[pct].extra, hi = at[pct + 1].extra;
		double lim = RISE_REL * (lo > 0 ? lo : 0) + RISE_ABS;

		if (!fits(&at[pct]))
			continue;	/* a hole, counted below */
		if (!fits(&at[pct + 1])) {
			v->holes++;
			continue;
		}
		if (hi - lo > lim)
			v->cliffs++;
		if (hi - lo - lim > worst) {
			worst = hi - lo - lim;
			v->rise = hi - lo;
			v->rise_lim = lim;
			v->rise_at = pct;
		}
	}
	printf("  default in 1%% steps: fits from 100%% down to %d%% (mean extra time %.2f%%)",
	       v->fine_min, 100 * v->mean);
	if (v->rise_at >= 0)
		printf("; largest rise %d%%->%d%%: %+.2f points of extra time (limit %.2f): %s",
		       v->rise_at, v->rise_at + 1, 100 * v->rise,
		       100 * v->rise_lim, v->rise > v->rise_lim ? "CLIFF" : "ok");
	printf("\n");
	if (v->cliffs || v->holes) {
		printf("  cliffs (budget: extra time at it -> at 1%% more):");
		for (pct = v->fine_min; pct > 0 && pct < 100; pct++) {
			char a[32], b[32];
			double lo = at[pct].extra, hi = at[pct + 1].extra;

			if (!fits(&at[pct]))
				continue;
			if (fits(&at[pct + 1]) &&
			    hi - lo <= RISE_REL * (lo > 0 ? lo : 0) + RISE_ABS)
				continue;
			snprintf(a, sizeof(a), "%.1f%%", 100 * lo);
			if (fits(&at[pct + 1]))
				snprintf(b, sizeof(b), "%.1f%%", 100 * hi);
			else
				cell(&at[pct + 1], b, sizeof(b));
			printf(" %d%%: %s -> %s", pct, a, b);
		}
		printf("\n");
	}
	return 0;
}

/* The 5% table and each column's minimum budget. */
static int coarse_table(struct bench_trace *bt, struct verdict *v)
{
	static struct outcome at[NR_COLS][NR_STEPS + 1];
	char buf[32];
	int ret, tuned = 0;

	memset(at, 0, sizeof(at));
	printf("  time as a multiple of the unconstrained replay; ! = default more than %.0f%% behind the best baseline\n",
	       100 * (BEHIND - 1));
	printf("  %6s", "budget");
	for (size_t c = 0; c < NR_COLS; c++)
		printf(" %12s", columns[c].name);
	printf("\n");
	for (int k = NR_STEPS; k >= 1; k--) {
		int pct = k * 100 / NR_STEPS;
		double best = 0, best_ch = 0;
		bool any = false, any_ch = false;

		for (size_t c = 0; c < NR_COLS; c++) {
			/* below a budget that did not fit, none does */
			if (k < NR_STEPS && at[c][k + 1].done &&
			    !fits(&at[c][k + 1])) {
				at[c][k] = at[c][k + 1];
				continue;
			}
			ret = run(bt, &columns[c], pct, &at[c][k]);
			if (ret)
				return ret;
			if (c && fits(&at[c][k]) && (!any || at[c][k].time < best)) {
				best = at[c][k].time;
				any = true;
			}
			if (c && !columns[c].contiguous && fits(&at[c][k]) &&
			    (!any_ch || at[c][k].time < best_ch)) {
				best_ch = at[c][k].time;
				any_ch = true;
			}
		}
		if (any_ch && (!fits(&at[0][k]) ||
			       at[0][k].time > BEHIND * best_ch))
			v->behind_chunked++;
		for (size_t c = 0; c < NR_COLS; c++)
			if (fits(&at[c][k]))
				break;
			else if (c == NR_COLS - 1)
				goto done;
		printf("  %5d%%", pct);
		for (size_t c = 0; c < NR_COLS; c++) {
			bool bad = !c && any && (!fits(&at[0][k]) ||
						 at[0][k].time > BEHIND * best);

			printf(" %11s%c", cell(&at[c][k], buf, sizeof(buf)),
			       bad ? '!' : ' ');
			if (bad)
				v->behind++;
		}
		printf("\n");
	}
done:
	/* Where policy.tune kept another pair than the default's keys. */
	for (int k = NR_STEPS; k >= 1; k--)
		if (at[0][k].done && at[0][k].tuned[0])
			printf("%s %d%% %s",
			       tuned++ ? "," : "  the default ran, kept by policy.tune:",
			       k * 100 / NR_STEPS, at[0][k].tuned);
	if (tuned)
		printf("\n");
	/* Minimum budgets: on down in 1% steps from the last 5% that fit. */
	for (size_t c = 0; c < NR_COLS; c++) {
		int last = -1;

		for (int k = NR_STEPS; k >= 1; k--)
			if (fits(&at[c][k]))
				last = k * 100 / NR_STEPS;
			else
				break;
		if (!c && v->fine_min > 0) {
			v->min[c] = v->fine_min;
			continue;
		}
		for (int pct = last - 1; last > 1 && pct >= 1; pct--) {
			struct outcome o = { 0 };

			ret = run(bt, &columns[c], pct, &o);
			if (ret)
				return ret;
			if (!fits(&o))
				break;
			last = pct;
		}
		v->min[c] = last;
	}
	printf("  %6s", "min");
	for (size_t c = 0; c < NR_COLS; c++) {
		bool bad = false;

		if (v->min[c] < 0)
			snprintf(buf, sizeof(buf), "none");
		else
			snprintf(buf, sizeof(buf), "%d%%", v->min[c]);
		for (size_t b = 1; !c && b < NR_COLS; b++)
			if (v->min[b] >= 0 &&
			    (v->min[0] < 0 || v->min[b] < v->min[0]))
				bad = true;
		printf(" %11s%c", buf, bad ? '!' : ' ');
	}
	printf("\n");
	return 0;
}

static int load(const char *path, struct bench_trace *bt)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace_error err;
	char msg[512];
	int ret;

	memset(bt, 0, sizeof(*bt));
	bt->path = path;
	ret = tp_trace_load(path, &fmt, &bt->t, &err);
	if (ret) {
		fprintf(stderr, "budget-sweep: %s\n",
			tp_trace_error_str(&err, msg, sizeof(msg)));
		return ret;
	}
	bt->dtr = fmt == TP_TRACE_FMT_DTR;
	ret = tp_trace_peak(bt->t, &bt->s);
	if (ret) {
		tp_trace_free(bt->t);
		bt->t = NULL;
	}
	return ret;
}

/*
 * The unconstrained replays, the bases of times and wall times, on each
 * pool: a replay on the contiguous pool (coop's) is measured against the
 * contiguous pool's unconstrained replay, as its extra time is. The
 * wall time base is
 * the fastest of BASE_RUNS replays: one short replay on a busy machine
 * can take several times its time, and every ratio with it.
 */
#define BASE_RUNS	3

static int bases(struct bench_trace *bt)
{
	for (int m = 0; m < 2; m++) {
		struct column free_col = { "unconstrained", NULL, NULL, m };
		struct tp_replay_opts o;
		struct tp_replay_result r;
		char extra[1200];

		opts_for(bt, &free_col, 0, &o, extra, sizeof(extra));
		for (int k = 0; k < BASE_RUNS; k++) {
			int ret = tp_replay_run(bt->t, &o, &r);

			if (ret || r.status != TP_REPLAY_OK) {
				fprintf(stderr, "budget-sweep: %s: unconstrained replay: %s\n",
					bt->path, r.error);
				return ret ? ret : -EIO;
			}
			if (!k || r.wall_s < bt->base_wall[m])
				bt->base_wall[m] = r.wall_s;
		}
		bt->base_ns[m] = r.time_ns ? r.time_ns : 1;
	}
	return 0;
}

static int run_trace(const char *path, struct verdict *v)
{
	struct bench_trace bt;
	int ret;

	memset(v, 0, sizeof(*v));
	v->name = base_name(path);
	v->fine_min = -1;
	v->rise_at = -1;
	for (size_t c = 0; c < NR_COLS; c++)
		v->min[c] = -1;
	ret = load(path, &bt);
	if (ret)
		return ret;
	ret = bases(&bt);
	if (ret)
		goto out;
	printf("\n%s: peak %.3f GB of live bytes, %zu ops, unconstrained %.3f ms (contiguous %.3f ms)\n",
	       v->name, bt.s.peak_bytes / 1e9, bt.t->n_ops,
	       bt.base_ns[0] / 1e6, bt.base_ns[1] / 1e6);
	if (!coarse_only)
		ret = fine_sweep(&bt, v);
	if (!ret && !fine_only)
		ret = coarse_table(&bt, v);
	fflush(stdout);
out:
	tp_trace_free(bt.t);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of @dir ending in @suffix, appended to @paths (sorted). */
static size_t list_dir(const char *dir, const char *suffix, char **paths,
		       size_t n, size_t max)
{
	size_t sl = strlen(suffix), first = n;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return n;
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
	qsort(paths + first, n - first, sizeof(paths[0]), cmp_str);
	return n;
}

/* The shipped traces and DTR's logs, where they are found. */
static size_t find_all(char **paths, size_t max)
{
	const char *top = getenv("top_srcdir");
	const char *tops[] = { top, ".", "..", NULL };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		char dir[4096];

		if (!tops[i])
			continue;
		snprintf(dir, sizeof(dir), "%s/traces", tops[i]);
		n = list_dir(dir, ".trace", paths, 0, max);
		if (!n)
			continue;
		snprintf(dir, sizeof(dir), "%s/../shared/traces/dtr", tops[i]);
		return list_dir(dir, ".log.gz", paths, n, max);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: budget-sweep [--profile custom|h200|h100] [--warmup N] [--policy F/D]\n"
		   "                    [--set KEY=VALUE]... [--fine-only | --coarse-only] [TRACE...]\n");
}

static void summary(const struct verdict *v, size_t n)
{
	printf("\nsummary (targets: no rise above %.0f%% of the extra time + %.0f point; default within %.0f%% of the best baseline; its minimum budget at most theirs)\n",
	       100 * RISE_REL, 100 * RISE_ABS, 100 * (BEHIND - 1));
	printf("  %-36s %14s %7s %7s %7s %9s %9s %9s\n", "trace",
	       "largest rise", "limit", "cliffs", "mean", "behind@5%",
	       "(chunked)", "min/best");
	for (size_t i = 0; i < n; i++) {
		int best = -1;
		char rise[32], lim[32], mins[32], mean[32];

		for (size_t c = 1; c < NR_COLS; c++)
			if (v[i].min[c] >= 0 && (best < 0 || v[i].min[c] < best))
				best = v[i].min[c];
		if (v[i].rise_at >= 0) {
			snprintf(rise, sizeof(rise), "%+.2f@%d%%",
				 100 * v[i].rise, v[i].rise_at);
			snprintf(lim, sizeof(lim), "%.2f", 100 * v[i].rise_lim);
		} else {
			snprintf(rise, sizeof(rise), "-");
			snprintf(lim, sizeof(lim), "-");
		}
		snprintf(mins, sizeof(mins), "%d/%d", v[i].min[0], best);
		if (v[i].fine_min >= 0)
			snprintf(mean, sizeof(mean), "%.2f%%", 100 * v[i].mean);
		else
			snprintf(mean, sizeof(mean), "-");
		printf("  %-36.36s %14s %7s %7d %7s %9d %9d %9s\n", v[i].name,
		       rise, lim, v[i].cliffs + v[i].holes, mean, v[i].behind,
		       v[i].behind_chunked, mins);
	}
	printf("  largest wall time of a replay: %.1fx the unconstrained replay's (%s)\n",
	       max_wall, max_wall_at);
	printf("  replays past %.0fx not ended by the bound: %u of %u (ended by it, as thrashing: %u); largest by policy:",
	       WALL_LIMIT, over_wall, replays, by_wall);
	for (size_t c = 0; c < NR_COLS; c++)
		printf(" %s %.1fx", columns[c].name, col_wall[c]);
	printf("\n");
	for (unsigned i = 0; i < over_wall && i < SLOW_LISTED; i++)
		printf("    %s\n", slow_at[i]);
	if (over_wall > SLOW_LISTED)
		printf("    (%u more)\n", over_wall - SLOW_LISTED);
}

int main(int argc, char **argv)
{
	char *paths[64];
	struct verdict v[64];
	size_t n = 0, done = 0;
	int i, ret = 0;

	tp_set_log(keep_log, NULL);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--profile") && i + 1 < argc) {
			profile = argv[++i];
			if (strcmp(profile, "custom") && strcmp(profile, "h200") &&
			    strcmp(profile, "h100")) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(a, "--warmup") && i + 1 < argc) {
			warmup = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(a, "--policy") && i + 1 < argc) {
			const char *p = argv[++i], *sl = strchr(p, '/');

			snprintf(def_filter, sizeof(def_filter), "%.*s",
				 (int)(sl ? sl - p : (long)strlen(p)), p);
			if (sl)
				snprintf(def_director, sizeof(def_director),
					 "%s", sl + 1);
		} else if (!strcmp(a, "--set") && i + 1 < argc) {
			size_t l = strlen(extra_all);

			snprintf(extra_all + l, sizeof(extra_all) - l, ",%s",
				 argv[++i]);
		} else if (!strcmp(a, "--fine-only")) {
			fine_only = true;
		} else if (!strcmp(a, "--coarse-only")) {
			coarse_only = true;
		} else if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		n = find_all(paths, 64);
		if (!n) {
			fprintf(stderr, "budget-sweep: no traces found (set top_srcdir or name them)\n");
			return 1;
		}
	} else {
		for (; i < argc && n < 64; i++) {
			char *all[64];
			size_t na = access(argv[i], R_OK) ? find_all(all, 64) : 0;
			size_t hit = 0;

			for (size_t k = 0; k < na; k++) {
				if (!hit && !strncmp(base_name(all[k]), argv[i],
						     strlen(argv[i]))) {
					paths[n++] = all[k];
					hit = 1;
				} else {
					free(all[k]);
				}
			}
			if (!hit && !access(argv[i], R_OK))
				paths[n++] = strdup(argv[i]);
			else if (!hit) {
				fprintf(stderr, "budget-sweep: '%s': no such file or trace\n",
					argv[i]);
				return 2;
			}
		}
	}
	printf("budget-sweep: sim backend, %s profile%s; %s\n",
	       profile ? profile : "custom", warmup ? " after warm-up" : "",
	       def_filter[0] ? "default policy replaced by --policy" :
	       "default policy as the keys give it");
	for (size_t k = 0; k < n; k++) {
		if (!ret) {
			ret = run_trace(paths[k], &v[k]);
			if (!ret)
				done++;
		}
	}
	summary(v, done);
	for (size_t k = 0; k < n; k++)
		free(paths[k]);
	return ret ? 1 : 0;
}
