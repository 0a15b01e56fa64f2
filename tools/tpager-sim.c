// SPDX-License-Identifier: MIT
/*
 * tpager-sim: replay an op trace (tpager-trace(5) or a DTR log) through
 * the real pager, lineage and policy on the sim backend, once without a
 * limit and once under a budget, and report what the budget cost.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "trace/replay.h"
#include "trace/sweep.h"
#include "trace/trace.h"
#include "ctl/conf.h"
#include "tools/cli.h"


enum budget_kind { B_NONE, B_BYTES, B_PERCENT, B_RATIO };

struct sim_args {
	const char *path;
	enum tp_trace_format fmt;
	enum budget_kind bkind;
	uint64_t bbytes;
	double bvalue;		/* percent or ratio */
	char filter[32], director[32];
	bool have_policy, sweep, json;
	bool profile;		/* a sim profile other than custom is set */
	bool dtr;		/* the trace is a DTR log */
	double thrash;		/* < 0: the format's default */
	int async;		/* --async 1, --sync 0; < 0: the default */
	double wall;		/* --wall-limit: 0 never */
	struct tp_replay_opts o;
	char extra[512];
};

const char *prog = "tpager-sim";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s TRACE [--format auto|tpager|dtr] [--budget B|P%%|RATIO]\n"
		"       [--policy FILTER/DIRECTOR] [--iterations N] [--warmup N|auto]\n"
		"       [--bandwidth GB/s] [--remap-us N] [--chunk-size B] [--no-prefetch]\n"
		"       [--async | --sync] [--thrash X] [--wall-limit X] [--set KEY=VALUE]...\n"
		"       [--sweep] [--json]\n", prog);
}

static void parse_budget(struct sim_args *a, const char *s)
{
	size_t len = strlen(s);
	char tmp[64];

	if (len && s[len - 1] == '%') {
		if (len >= sizeof(tmp))
			die("--budget: '%s' is not a percent", s);
		memcpy(tmp, s, len - 1);
		tmp[len - 1] = 0;
		if (tp_parse_double(tmp, &a->bvalue) || a->bvalue <= 0 ||
		    a->bvalue > 100)
			die("--budget: '%s' is not a percent in (0, 100]", s);
		a->bkind = B_PERCENT;
	} else if (strchr(s, '.')) {
		if (tp_parse_double(s, &a->bvalue) || a->bvalue <= 0 ||
		    a->bvalue > 1)
			die("--budget: '%s' is not a ratio in (0, 1]", s);
		a->bkind = B_RATIO;
	} else {
		if (!parse_bytes(s, &a->bbytes) || !a->bbytes)
			die("--budget: '%s' is not a size (bytes, K/M/G/T), a percent or a ratio", s);
		a->bkind = B_BYTES;
	}
}

static void parse_policy(struct sim_args *a, const char *s)
{
	const char *slash = strchr(s, '/');
	size_t fl = slash ? (size_t)(slash - s) : strlen(s);
	size_t dl = slash ? strlen(slash + 1) : 0;

	if (fl >= sizeof(a->filter) || dl >= sizeof(a->director) ||
	    (!fl && !dl) || strchr(s, ','))
		die("--policy: '%s' is not FILTER/DIRECTOR", s);
	memcpy(a->filter, s, fl);
	a->filter[fl] = 0;
	if (slash)
		memcpy(a->director, slash + 1, dl + 1);
	a->have_policy = true;
}

static void add_extra(struct sim_args *a, const char *kv)
{
	size_t n = strlen(a->extra);

	if (!strchr(kv, '=') || strchr(kv, ','))
		die("--set: '%s' is not KEY=VALUE", kv);
	if (n + strlen(kv) + 2 > sizeof(a->extra))
		die("--set: too many settings");
	snprintf(a->extra + n, sizeof(a->extra) - n, "%s%s", n ? "," : "", kv);
}

static void parse_args(struct sim_args *a, int argc, char **argv)
{
	enum { O_FORMAT = 256, O_BUDGET, O_POLICY, O_ITER, O_WARMUP, O_BW, O_REMAP,
	       O_CHUNK, O_NOPF, O_ASYNC, O_SYNC, O_THRASH, O_WALL, O_SET, O_SWEEP, O_JSON,
	       O_HELP };
	static const struct option lo[] = {
		{ "format", required_argument, NULL, O_FORMAT },
		{ "budget", required_argument, NULL, O_BUDGET },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "iterations", required_argument, NULL, O_ITER },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "bandwidth", required_argument, NULL, O_BW },
		{ "remap-us", required_argument, NULL, O_REMAP },
		{ "chunk-size", required_argument, NULL, O_CHUNK },
		{ "no-prefetch", no_argument, NULL, O_NOPF },
		{ "async", no_argument, NULL, O_ASYNC },
		{ "sync", no_argument, NULL, O_SYNC },
		{ "thrash", required_argument, NULL, O_THRASH },
		{ "wall-limit", required_argument, NULL, O_WALL },
		{ "set", required_argument, NULL, O_SET },
		{ "sweep", no_argument, NULL, O_SWEEP },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, O_HELP },
		{ 0 }
	};
	unsigned long long u;
	double d;
	int c;

	/*
	 * Driver costs are per 2 MiB (the GPU's granularity): a smaller chunk
	 * for byte accuracy must not multiply them. --set can change it.
	 */
	add_extra(a, "vmm.sim.driver_granule=2M");
	a->fmt = TP_TRACE_FMT_UNKNOWN;
	a->thrash = -1;
	a->async = -1;
	a->wall = TP_REPLAY_WALL_LIMIT;
	a->o.prefetch = -1;
	a->o.remap_ns = -2;	/* unset: the format's default */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_FORMAT:
			if (!strcmp(optarg, "auto"))
				a->fmt = TP_TRACE_FMT_UNKNOWN;
			else if (!strcmp(optarg, "tpager"))
				a->fmt = TP_TRACE_FMT_TEXT;
			else if (!strcmp(optarg, "dtr"))
				a->fmt = TP_TRACE_FMT_DTR;
			else
				die("--format: '%s' is not auto, tpager or dtr", optarg);
			break;
		case O_BUDGET:
			parse_budget(a, optarg);
			break;
		case O_POLICY:
			parse_policy(a, optarg);
			break;
		case O_ITER:
			if (!parse_uint(optarg, 1000000, &u) || !u)
				die("--iterations: '%s' is not a count from 1 to 1000000", optarg);
			a->o.iterations = (unsigned)u;
			break;
		case O_WARMUP:
			/* auto: as many as policy.tune times pairs for */
			if (!strcmp(optarg, "auto"))
				a->o.warmup_tuned = true;
			else if (!parse_uint(optarg, 1000, &u))
				die("--warmup: '%s' is neither a count from 0 to 1000 nor auto", optarg);
			else
				a->o.warmup = (unsigned)u;
			break;
		case O_BW:
			if (tp_parse_double(optarg, &d) || d < 0.001 || d > 10000)
				die("--bandwidth: '%s' is not GB/s in [0.001, 10000]", optarg);
			a->o.bandwidth = d;
			break;
		case O_REMAP:
			if (tp_parse_double(optarg, &d) || d < 0 || d > 1e6)
				die("--remap-us: '%s' is not microseconds in [0, 1000000]", optarg);
			a->o.remap_ns = (int64_t)llround(d * 1000);
			break;
		case O_CHUNK:
			if (!parse_bytes(optarg, &a->o.chunk_size) ||
			    a->o.chunk_size < 4096 ||
			    (a->o.chunk_size & (a->o.chunk_size - 1)))
				die("--chunk-size: '%s' is not a power of two of at least 4096 bytes", optarg);
			break;
		case O_NOPF:
			a->o.prefetch = 0;
			break;
		case O_ASYNC:
		case O_SYNC:
			a->async = c == O_ASYNC;
			break;
		case O_THRASH:
			if (tp_parse_double(optarg, &d) || (d != 0 && d <= 1))
				die("--thrash: '%s' is not 0 (off) or a limit above 1", optarg);
			a->thrash = d;
			break;
		case O_WALL:
			if (tp_parse_double(optarg, &d) || (d != 0 && d <= 1))
				die("--wall-limit: '%s' is not 0 (off) or a multiple above 1", optarg);
			a->wall = d;
			break;
		case O_SET:
			add_extra(a, optarg);
			/* A profile charges the GPU's driver costs (the last
			 * setting wins, as in the keys). */
			if (!strncmp(optarg, "vmm.sim.profile=", 16))
				a->profile = strcmp(optarg + 16, "custom") != 0;
			break;
		case O_SWEEP:
			a->sweep = true;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (optopt >= O_FORMAT)
				die("option '%s' needs a value", argv[optind - 1]);
			die("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		die(optind >= argc ? "no trace given (see --help)" :
		    "more than one trace given (see --help)");
	a->path = argv[optind];
	/* A GPU's profile prices the copies as that GPU's link ran them. */
	if (a->profile && a->o.bandwidth > 0)
		die("--bandwidth: a GPU's profile (vmm.sim.profile) sets the host link's speed; use one or the other");
	if (a->have_policy) {
		a->o.filter = a->filter[0] ? a->filter : NULL;
		a->o.director = a->director[0] ? a->director : NULL;
	}
	a->o.extra = a->extra;
}

static const char *status_name(enum tp_replay_status s)
{
	switch (s) {
	case TP_REPLAY_OK: return "fits";
	case TP_REPLAY_OOM: return "OOM";
	case TP_REPLAY_THRASH: return "thrash";
	default: return "error";
	}
}

/*
 * The library's last error message: a budget that does not fit is a
 * result here, not something to print, and a bad key is reported once,
 * by die().
 */
static char last_log[512];

static void keep_log(enum tp_log_level level, const char *msg, void *priv)
{
	if (level <= TP_LOG_ERROR)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

/* Replay; a library failure other than a verdict ends the program. */
static void replay(const struct tp_trace *t, const struct tp_replay_opts *o,
		   struct tp_replay_result *r)
{
	int ret;

	last_log[0] = 0;
	ret = tp_replay_run(t, o, r);
	if (ret || r->status == TP_REPLAY_ERROR) {
		const char *why = r->error[0] ? r->error : tp_strerror(ret);

		if (!r->err || !last_log[0] || strstr(why, last_log))
			die("%s", why);
		die("%s: %s", why, last_log);
	}
}

static void report_text(const struct sim_args *a,
			const struct tp_trace_summary *sum,
			const struct tp_replay_result *u,
			const struct tp_replay_result *r)
{
	double extra = u->time_ns ? 100.0 * ((double)r->time_ns -
					     (double)u->time_ns) / (double)u->time_ns : 0;
	double ratio = sum->peak_bytes ?
		(double)r->budget_bytes / (double)sum->peak_bytes : 0.0;
	/* An OOM replay counted nothing: the ops are the trace's. */
	const struct tp_replay_result *o = r->status == TP_REPLAY_OOM ? u : r;

	printf("trace            %s\n", a->path);
	printf("policy           %s\n", r->policy);
	if (r->in_force[0] && strcmp(r->in_force, r->policy))
		printf("in force         %s (policy.tune kept it)\n", r->in_force);
	if (a->o.warmup_tuned)
		printf("warm-up          %u passes\n", r->warmup);
	if (a->o.remap_ns >= 0)
		printf("remap cost       %.3f us a driver granule, told to the policy\n",
		       (double)a->o.remap_ns / 1000);
	else
		printf("remap cost       the backend's, told to the policy\n");
	printf("ops              %" PRIu64 " (%" PRIu64 " tp_op_run calls)\n",
	       o->ops, o->op_runs);
	printf("peak (trace)     %" PRIu64 " bytes\n", sum->peak_bytes);
	printf("peak (no limit)  %" PRIu64 " bytes mapped, %" PRIu64 " held by tensors\n",
	       u->phys_peak, u->held_peak);
	if (r->limited)
		printf("budget           %" PRIu64 " bytes (%.3f of the trace peak), chunk %" PRIu64 "\n",
		       r->budget_bytes, ratio, r->chunk_size);
	else
		printf("budget           none: no limit (a pool of %" PRIu64 " bytes, %.3f times the trace peak), chunk %" PRIu64 "\n",
		       r->budget_bytes, ratio, r->chunk_size);
	printf("result           %s%s%s\n", status_name(r->status),
	       r->status != TP_REPLAY_OK ? ": " : "",
	       r->status != TP_REPLAY_OK ? r->error : "");
	printf("physical peak    %" PRIu64 " bytes mapped, %" PRIu64 " held by tensors\n",
	       r->phys_peak, r->held_peak);
	if (r->status == TP_REPLAY_OOM) {
		/* Stopped at the op that found no room: no figures. */
		printf("fragmentation    %.4f (free / held at allocations that found no run)\n",
		       r->fragmentation_ppm / 1e6);
		return;
	}
	printf("overhead (DTR)   %.4f\n", tp_replay_overhead(r));
	printf("extra time       %.2f %%\n", extra);
	printf("evictions        %" PRIu64 " (%" PRIu64 " partial)\n",
	       r->evictions, r->partial_evictions);
	printf("split runs       %" PRIu64 " (%" PRIu64 " parts)\n",
	       r->split_runs, r->split_parts);
	printf("offloads         %" PRIu64 "\n", r->offloads);
	printf("host swap        %" PRIu64 " bytes at most in use (%" PRIu64
	       " held)\n", r->host_peak, r->host_held);
	printf("reloads          %" PRIu64 "\n", r->reloads);
	printf("writebacks       %" PRIu64 " (%" PRIu64
	       " offloads copied nothing)\n", r->writebacks, r->cache_offloads);
	printf("recomputes       %" PRIu64 " (%.3f ms)\n", r->recomputes,
	       r->recompute_ns / 1e6);
	printf("prefetch hits    %" PRIu64 " (%" PRIu64 " issued, %" PRIu64
	       " still in flight when used)\n", r->prefetch_hits,
	       r->prefetch_issued, r->prefetch_late);
	printf("stall            %.3f ms\n", r->stall_ns / 1e6);
	printf("driver           %.3f ms (%" PRIu64 " calls)\n",
	       r->driver_ns / 1e6, r->driver_calls);
	printf("PCIe busy        %.4f\n", r->time_ns ?
	       (double)r->copy_ns / (double)r->time_ns : 0.0);
	printf("fragmentation    %.4f (free / held at allocations that found no run)\n",
	       r->fragmentation_ppm / 1e6);
	printf("decision latency %.0f ns (%" PRIu64 " decisions)\n",
	       r->policy_decisions ? (double)r->policy_ns /
	       (double)r->policy_decisions : 0.0, r->policy_decisions);
	printf("time             %.3f ms (no limit %.3f ms)\n",
	       r->time_ns / 1e6, u->time_ns / 1e6);
	printf("replay speed     %.0f ops/s\n",
	       r->wall_s > 0 ? r->ops / r->wall_s : 0.0);
}

static void report_json(const struct sim_args *a,
			const struct tp_trace_summary *sum,
			const struct tp_replay_result *u,
			const struct tp_replay_result *r)
{
	double extra = u->time_ns ? 100.0 * ((double)r->time_ns -
					     (double)u->time_ns) / (double)u->time_ns : 0;

	if (r->status == TP_REPLAY_OOM) {
		/* Stopped at the op that found no room: no figures. */
		printf("{\"ops\":%" PRIu64 ",\"trace_peak\":%" PRIu64
		       ",\"unlimited_peak\":%" PRIu64 ",\"budget\":%" PRIu64
		       ",\"limited\":%s,\"policy\":\"%s\",\"chunk_size\":%" PRIu64
		       ",\"result\":\"%s\",\"phys_peak\":%" PRIu64
		       ",\"held_peak\":%" PRIu64 ",\"overhead\":null,\"fragmentation_ppm\":%" PRIu64 "}\n",
		       u->ops, sum->peak_bytes, u->phys_peak, r->budget_bytes,
		       r->limited ? "true" : "false", r->policy, r->chunk_size,
		       status_name(r->status), r->phys_peak, r->held_peak,
		       r->fragmentation_ppm);
		return;
	}
	printf("{\"ops\":%" PRIu64 ",\"op_runs\":%" PRIu64
	       ",\"trace_peak\":%" PRIu64 ",\"unlimited_peak\":%" PRIu64
	       ",\"budget\":%" PRIu64 ",\"limited\":%s,\"policy\":\"%s\""
	       ",\"chunk_size\":%" PRIu64
	       ",\"result\":\"%s\",\"phys_peak\":%" PRIu64
	       ",\"held_peak\":%" PRIu64 ",\"overhead\":%.6f,\"extra_time_pct\":%.4f"
	       ",\"evictions\":%" PRIu64 ",\"partial_evictions\":%" PRIu64
	       ",\"offloads\":%" PRIu64
	       ",\"reloads\":%" PRIu64 ",\"recomputes\":%" PRIu64
	       ",\"recompute_ns\":%" PRIu64 ",\"prefetch_hits\":%" PRIu64
	       ",\"prefetch_issued\":%" PRIu64 ",\"prefetch_late\":%" PRIu64
	       ",\"stall_ns\":%" PRIu64 ",\"driver_ns\":%" PRIu64
	       ",\"driver_calls\":%" PRIu64 ",\"pcie_busy\":%.6f"
	       ",\"decision_ns\":%.1f,\"time_ns\":%" PRIu64
	       ",\"unlimited_time_ns\":%" PRIu64 ",\"ops_per_s\":%.0f"
	       ",\"fragmentation_ppm\":%" PRIu64 ",\"writebacks\":%" PRIu64
	       ",\"cache_offloads\":%" PRIu64 ",\"split_runs\":%" PRIu64
	       ",\"split_parts\":%" PRIu64 ",\"host_peak\":%" PRIu64
	       ",\"host_held\":%" PRIu64 ",\"in_force\":\"%s\""
	       ",\"warmup\":%u}\n",
	       r->ops, r->op_runs, sum->peak_bytes, u->phys_peak,
	       r->budget_bytes, r->limited ? "true" : "false", r->policy,
	       r->chunk_size, status_name(r->status),
	       r->phys_peak, r->held_peak, tp_replay_overhead(r), extra,
	       r->evictions,
	       r->partial_evictions, r->offloads, r->reloads, r->recomputes, r->recompute_ns,
	       r->prefetch_hits, r->prefetch_issued, r->prefetch_late,
	       r->stall_ns, r->driver_ns, r->driver_calls, r->time_ns ?
	       (double)r->copy_ns / (double)r->time_ns : 0.0,
	       r->policy_decisions ? (double)r->policy_ns /
	       (double)r->policy_decisions : 0.0, r->time_ns, u->time_ns,
	       r->wall_s > 0 ? r->ops / r->wall_s : 0.0,
	       r->fragmentation_ppm, r->writebacks, r->cache_offloads,
	       r->split_runs, r->split_parts, r->host_peak, r->host_held,
	       r->in_force, r->warmup);
	(void)a;
}

static void sweep_line(const struct sim_args *a, int p,
		       const struct tp_replay_result *r)
{
	char pct[16];

	/* An OOM replay stopped at the op that found no room: no figures
	 * but the fragmentation it met. */
	if (r->status == TP_REPLAY_OOM) {
		if (a->json)
			printf("{\"budget_pct\":%g,\"result\":\"%s\",\"overhead\":null,\"evictions\":null,\"offloads\":null,\"recomputes\":null,\"fragmentation_ppm\":%" PRIu64 "}\n",
			       p / 10.0, status_name(r->status),
			       r->fragmentation_ppm);
		else
			printf("%7s  %-7s %8s %10s %10s %10s %8.4f\n",
			       tp_sweep_text(p, pct, sizeof(pct)),
			       status_name(r->status), "-", "-", "-", "-",
			       r->fragmentation_ppm / 1e6);
		return;
	}
	if (a->json)
		printf("{\"budget_pct\":%g,\"result\":\"%s\",\"overhead\":%.6f,\"evictions\":%" PRIu64 ",\"offloads\":%" PRIu64 ",\"recomputes\":%" PRIu64 ",\"fragmentation_ppm\":%" PRIu64 "}\n",
		       p / 10.0, status_name(r->status), tp_replay_overhead(r),
		       r->evictions, r->offloads, r->recomputes,
		       r->fragmentation_ppm);
	else
		printf("%7s  %-7s %8.4f %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8.4f\n",
		       tp_sweep_text(p, pct, sizeof(pct)), status_name(r->status),
		       tp_replay_overhead(r),
		       r->evictions, r->offloads, r->recomputes,
		       r->fragmentation_ppm / 1e6);
}

struct sweep_run {
	const struct sim_args *a;
	const struct tp_trace *t;
	struct tp_replay_opts o;
	uint64_t peak;
	char policy[64];	/* as the replays ran it */
};

/* tp_sweep()'s run: replay at @tenths of the peak, print its row. */
static int sweep_run(void *priv, int tenths)
{
	struct sweep_run *s = priv;
	struct tp_replay_result r;

	s->o.budget_bytes = tp_sweep_bytes(s->peak, tenths);
	replay(s->t, &s->o, &r);
	snprintf(s->policy, sizeof(s->policy), "%s", r.policy);
	sweep_line(s->a, tenths, &r);
	return r.status == TP_REPLAY_OK;
}

/*
 * The replay without a budget, into *@u; and the time a budgeted replay
 * of tpager's own trace may take before it counts as thrashing
 * (tp_replay_opts.thrash_base_ns), and the wall time any may take
 * (wall_base_s).
 */
static void replay_unconstrained(struct sim_args *a, const struct tp_trace *t,
				 struct tp_replay_result *u)
{
	struct tp_replay_opts uo = a->o;
	unsigned passes = a->o.iterations ? a->o.iterations : 1;

	uo.budget_bytes = 0;
	uo.thrash_limit = 0;
	uo.wall_limit = 0;
	replay(t, &uo, u);
	if (!a->dtr && a->o.thrash_limit > 0 && u->status == TP_REPLAY_OK)
		a->o.thrash_base_ns = u->time_ns / passes;
	/* Every trace's replay, DTR's logs' too, within a multiple of its
	 * unconstrained one's wall time. */
	if (u->status == TP_REPLAY_OK) {
		a->o.wall_limit = a->wall;
		a->o.wall_base_s = u->wall_s / passes;
	}
}

/* Coop's metric, the smallest budget that fits (trace/sweep.h). */
static int sweep(struct sim_args *a, const struct tp_trace *t,
		 const struct tp_trace_summary *sum)
{
	struct sweep_run s = { .a = a, .t = t, .peak = sum->peak_bytes };
	struct tp_replay_result u;
	char pct[16];
	int min;

	replay_unconstrained(a, t, &u);
	s.o = a->o;

	if (!a->json)
		printf("%-8s %-7s %-8s %10s %10s %10s %8s\n", "budget",
		       "result", "overhead", "evictions", "offloads",
		       "recomputes", "frag");
	tp_sweep(s.peak, tp_replay_chunk(t, &s.o), sweep_run, &s, &min);
	if (a->json)
		printf("{\"min_budget_pct\":%g}\n", min < 0 ? -1.0 : min / 10.0);
	else if (min < 0)
		printf("minimum budget   none fits up to %d%%\n",
		       TP_SWEEP_MAX / 10);
	else
		printf("minimum budget   %s of the trace peak (%s)\n",
		       tp_sweep_text(min, pct, sizeof(pct)), s.policy);
	return min < 0;
}

int main(int argc, char **argv)
{
	struct sim_args a = { 0 };
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	struct tp_trace_summary sum;
	struct tp_replay_result u, r;
	struct tp_replay_opts defaults;
	char msg[512];
	bool dtr;
	int ret;

	parse_args(&a, argc, argv);
	tp_set_log(keep_log, NULL);
	ret = tp_trace_load(a.path, &a.fmt, &t, &err);
	if (ret)
		die("%s", tp_trace_error_str(&err, msg, sizeof(msg)));
	ret = tp_trace_peak(t, &sum);
	if (ret)
		die("%s: %s", a.path, strerror(-ret));
	/* The trace's kind's remap cost and thrash limit, as the benches'. */
	dtr = a.fmt == TP_TRACE_FMT_DTR;
	defaults = a.o;
	tp_replay_defaults(&defaults, dtr, a.profile);
	if (a.o.remap_ns == -2)
		a.o.remap_ns = defaults.remap_ns;
	a.o.thrash_limit = a.thrash >= 0 ? a.thrash : defaults.thrash_limit;
	a.o.async = a.async >= 0 ? a.async : defaults.async;
	a.dtr = dtr;

	if (a.sweep) {
		ret = sweep(&a, t, &sum);
		tp_trace_free(t);
		return ret;
	}
	switch (a.bkind) {
	case B_BYTES:
		a.o.budget_bytes = a.bbytes;
		break;
	case B_PERCENT:
		a.o.budget_bytes = (uint64_t)((double)sum.peak_bytes *
					      a.bvalue / 100.0);
		break;
	case B_RATIO:
		a.o.budget_bytes = (uint64_t)((double)sum.peak_bytes * a.bvalue);
		break;
	default:
		break;
	}
	if (a.bkind != B_NONE && a.o.budget_bytes < tp_replay_chunk(t, &a.o))
		die("--budget: %" PRIu64 " bytes is less than one chunk",
		    a.o.budget_bytes);
	replay_unconstrained(&a, t, &u);
	if (a.bkind == B_NONE)
		r = u;
	else
		replay(t, &a.o, &r);
	if (a.json)
		report_json(&a, &sum, &u, &r);
	else
		report_text(&a, &sum, &u, &r);
	tp_trace_free(t);
	return r.status == TP_REPLAY_OK ? 0 : 1;
}
