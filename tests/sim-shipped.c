// SPDX-License-Identifier: MIT
/*
 * The smallest shipped trace (traces/vgg16-b128.trace) through tpager-sim's
 * path: the same replay twice gives the same figures, and under every
 * budget that fits, on chunks and on the contiguous pool, the replay runs
 * every op of the region and the physical peak stays within the budget.
 * The sim has no randomness: there is no seed to print.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tpager.h"
#include "trace/replay.h"

static const unsigned pct[] = { 100, 75, 50, 35, 25 };
#define NR_PCT	(sizeof(pct) / sizeof(pct[0]))

static const struct {
	const char *filter, *director, *extra;
} pol[] = {
	{ "delta", "delta-overlap", "vmm.sim.driver_granule=2M" },
	{ "dtr", "evict", "vmm.sim.driver_granule=2M" },
	{ "coop", "evict", "vmm.sim.driver_granule=2M,vmm.mode=contiguous" },
};
#define NR_POL	(sizeof(pol) / sizeof(pol[0]))

static void quiet(enum tp_log_level level, const char *msg, void *priv)
{
}

static int run(const struct tp_trace *t, size_t p, uint64_t budget,
	       struct tp_replay_result *r)
{
	struct tp_replay_opts o = {
		.budget_bytes = budget,
		.filter = pol[p].filter,
		.director = pol[p].director,
		.prefetch = -1,
		.remap_ns = -1,
		.thrash_limit = budget ? 10 : 0,
		.extra = pol[p].extra,
	};

	return tp_replay_run(t, &o, r);
}

static bool same(const struct tp_replay_result *a,
		 const struct tp_replay_result *b)
{
	return a->status == b->status && a->ops == b->ops &&
	       a->time_ns == b->time_ns && a->phys_peak == b->phys_peak &&
	       a->evictions == b->evictions && a->offloads == b->offloads &&
	       a->reloads == b->reloads && a->recomputes == b->recomputes &&
	       a->recompute_ns == b->recompute_ns &&
	       a->prefetch_hits == b->prefetch_hits &&
	       a->stall_ns == b->stall_ns && a->copy_ns == b->copy_ns &&
	       a->fragmentation_ppm == b->fragmentation_ppm;
}

int main(void)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	const char *top = getenv("top_srcdir");
	struct tp_replay_result u, r, r2;
	struct tp_trace_summary sum;
	struct tp_trace_error err;
	struct tp_trace *t = NULL;
	char path[4096], msg[512];
	unsigned fits = 0;
	int ret;

	snprintf(path, sizeof(path), "%s/traces/vgg16-b128.trace",
		 top ? top : "..");
	tp_set_log(quiet, NULL);
	if (tp_trace_load(path, &fmt, &t, &err))
		plan_skip_all("%s", tp_trace_error_str(&err, msg, sizeof(msg)));
	plan_tests(2 + NR_POL * (1 + NR_PCT) + 1);
	ok_rc(tp_trace_peak(t, &sum), "%s: peak accounting", path);
	ret = run(t, 0, 0, &u);
	ok(!ret && u.status == TP_REPLAY_OK && u.ops > 0,
	   "unconstrained replay: %llu ops, %.3f ms",
	   (unsigned long long)u.ops, u.time_ns / 1e6);

	for (size_t p = 0; p < NR_POL; p++) {
		uint64_t half = sum.peak_bytes / 2;

		ret = run(t, p, half, &r);
		if (!ret)
			ret = run(t, p, half, &r2);
		ok(!ret && same(&r, &r2),
		   "%s/%s%s at 50%%: the same figures twice (%.3f ms, %llu evictions, %llu offloads)",
		   pol[p].filter, pol[p].director,
		   strstr(pol[p].extra, "contiguous") ? " contiguous" : "",
		   r.time_ns / 1e6, (unsigned long long)r.evictions,
		   (unsigned long long)r.offloads);
		for (size_t k = 0; k < NR_PCT; k++) {
			uint64_t budget = sum.peak_bytes * pct[k] / 100;

			ret = run(t, p, budget, &r);
			if (!ret && r.status == TP_REPLAY_OK)
				fits++;
			/* Not fitting is an answer; when it fits, all of it ran
			 * inside the budget (rounded down to chunks). */
			ok(!ret && r.status != TP_REPLAY_ERROR &&
			   (r.status != TP_REPLAY_OK ||
			    (r.ops == u.ops && r.phys_peak <= budget &&
			     r.budget_bytes <= budget)),
			   "%s/%s%s at %u%%: %s, peak %llu <= %llu",
			   pol[p].filter, pol[p].director,
			   strstr(pol[p].extra, "contiguous") ? " contiguous" : "",
			   pct[k], r.status == TP_REPLAY_OK ? "fits" :
			   r.status == TP_REPLAY_OOM ? "OOM" : "stopped",
			   (unsigned long long)r.phys_peak,
			   (unsigned long long)budget);
		}
	}
	/* Delta-overlap and DTR fit down to 35% of this trace (policy-table). */
	ok(fits >= 2 * 3, "%u of %zu runs fit", fits, NR_POL * NR_PCT);
	tp_trace_free(t);
	return exit_status();
}
