// SPDX-License-Identifier: MIT
/*
 * The policies against their targets on the sim backend (issue 5), on a
 * CNN-like and a transformer-like trace from trace/trace_gen.c at a size
 * a CI machine replays in seconds:
 *
 *  - under budgets of 100/75/50/35% of the unconstrained physical peak,
 *    `delta` (delta filter, delta director) completes and never maps more
 *    than the budget;
 *  - at 50%, delta's extra time over the unconstrained replay is no more
 *    than lru's (lru filter, delta director: only the filter differs) and
 *    evict's (delta filter, evict-only director: only the director
 *    differs); a baseline that does not fit counts as infinitely slow;
 *  - on a repeated training iteration at 50%, with the default policy
 *    and with swap only (every tensor that leaves comes back by copy, on
 *    a PCIe 4.0 link), the prefetcher starts more than 90% of the reloads
 *    and the prefetch hit rate is above 90%, where
 *        hit rate = hits / (hits + late + misses)
 *    hits:   acquisitions of a prefetched tensor that found it resident;
 *    late:   acquisitions of a prefetched tensor still in flight;
 *    misses: reloads the prefetcher did not start (reloads - issued),
 *    i.e. every acquisition of an offloaded tensor is one of the three.
 *
 * The traces and the sim are deterministic: there is no random seed.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/tap.h"
#include "trace/replay.h"
#include "trace/trace_gen.h"

#define ITERATIONS	1	/* repeats of the measured iteration */
/*
 * DTR's rule bounds a replay that thrashes: it stops (and does not
 * complete) once recomputing costs more than THRASH - 1 times the compute.
 */
#define THRASH		20
/* Driver costs per 2 MiB granule, as an NVIDIA driver pays them. */
#define SIM_COSTS	"vmm.sim.driver_granule=2M"

/*
 * Known failures, marked "# TODO" for the harness (expected failures; a
 * pass would be reported as unexpected): where the targets are not met
 * on the current mechanism. The small transformer-like trace (BERT-base,
 * batch 8, sequence 128) holds more weights and Adam state (1.8 GB) than
 * activations, so at 50% of its peak that state crosses the 12 GB/s link
 * every iteration in about the time the compute takes: the prefetcher
 * starts nearly every reload, but the link cannot land them all in time
 * (late, not missed).
 */
#define TODO_PREFETCH		(1u << 0)	/* hit rate under 90% */
#define TODO_PREFETCH_SWAP	(1u << 1)	/* same, swap only, 25 GB/s */

struct model {
	const char *name;
	struct tp_trace_gen_opts o;
	unsigned todo;
};

static const char *todo(const struct model *m, unsigned flag)
{
	return m->todo & flag ? " # TODO target not met yet" : "";
}

static const struct model models[] = {
	/* residual conv blocks, SGD with momentum */
	{ "cnn", { TP_TRACE_GEN_CNN, TP_TRACE_GEN_SGD, 64, 16, 64, 56,
		   0, 1000, 2 }, 0 },
	/* pre-norm attention + MLP layers, Adam */
	{ "transformer", { TP_TRACE_GEN_TRANSFORMER, TP_TRACE_GEN_ADAM, 8,
			   12, 768, 128, 12, 30522, 2 },
	  TODO_PREFETCH | TODO_PREFETCH_SWAP },
};

static int replay(const struct tp_trace *t, uint64_t budget,
		  const char *filter, const char *director,
		  struct tp_replay_result *r)
{
	struct tp_replay_opts o = {
		.budget_bytes = budget,
		.filter = filter,
		.director = director,
		.prefetch = -1,
		.remap_ns = -1,
		.iterations = ITERATIONS,
		.thrash_limit = budget ? THRASH : 0,
		.extra = SIM_COSTS,
	};

	return tp_replay_run(t, &o, r);
}

static double extra_pct(const struct tp_replay_result *r,
			const struct tp_replay_result *u)
{
	if (r->status != TP_REPLAY_OK)
		return INFINITY;
	return 100.0 * ((double)r->time_ns - (double)u->time_ns) /
	       (double)u->time_ns;
}

static void show(const char *what, const struct tp_replay_result *r,
		 const struct tp_replay_result *u)
{
	diag("%-28s %s extra %.2f%% peak %llu/%llu evict %llu offload %llu "
	     "recompute %llu prefetch %llu/%llu late %llu",
	     what, r->status == TP_REPLAY_OK ? "fits" :
	     r->status == TP_REPLAY_THRASH ? "THRASHES" : "FAILS",
	     extra_pct(r, u), (unsigned long long)r->phys_peak,
	     (unsigned long long)r->budget_bytes,
	     (unsigned long long)r->evictions,
	     (unsigned long long)r->offloads,
	     (unsigned long long)r->recomputes,
	     (unsigned long long)r->prefetch_hits,
	     (unsigned long long)r->prefetch_issued,
	     (unsigned long long)r->prefetch_late);
}

static void budgets(const struct model *m, const struct tp_trace *t,
		    const struct tp_replay_result *u)
{
	static const unsigned pct[] = { 100, 75, 50, 35 };
	struct tp_replay_result r;
	char what[64];

	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		uint64_t budget = u->phys_peak * pct[i] / 100;
		int ret = replay(t, budget, "delta", "delta", &r);

		snprintf(what, sizeof(what), "%s delta/delta %u%%", m->name,
			 pct[i]);
		show(what, &r, u);
		ok(ret == 0 && r.status == TP_REPLAY_OK,
		   "%s: completes under %u%% of the unconstrained peak",
		   m->name, pct[i]);
		/* The pager rounds the budget down to whole chunks. */
		ok(ret == 0 && r.phys_peak <= budget && r.budget_bytes <= budget,
		   "%s: physical peak %llu <= budget %llu at %u%%", m->name,
		   (unsigned long long)r.phys_peak,
		   (unsigned long long)budget, pct[i]);
	}
}

static void against_baselines(const struct model *m, const struct tp_trace *t,
			      const struct tp_replay_result *u)
{
	uint64_t budget = u->phys_peak / 2;
	struct tp_replay_result d, l, e;
	char what[64];
	int rd, rl, re;

	rd = replay(t, budget, "delta", "delta", &d);
	rl = replay(t, budget, "lru", "delta", &l);
	re = replay(t, budget, "delta", "evict", &e);
	snprintf(what, sizeof(what), "%s 50%% delta/delta", m->name);
	show(what, &d, u);
	snprintf(what, sizeof(what), "%s 50%% lru/delta", m->name);
	show(what, &l, u);
	snprintf(what, sizeof(what), "%s 50%% delta/evict", m->name);
	show(what, &e, u);
	ok(!rd && !rl && d.status == TP_REPLAY_OK &&
	   extra_pct(&d, u) <= extra_pct(&l, u),
	   "%s at 50%%: delta's extra time %.2f%% <= lru's %.2f%%", m->name,
	   extra_pct(&d, u), extra_pct(&l, u));
	ok(!rd && !re && d.status == TP_REPLAY_OK &&
	   extra_pct(&d, u) <= extra_pct(&e, u),
	   "%s at 50%%: delta's extra time %.2f%% <= evict's %.2f%%", m->name,
	   extra_pct(&d, u), extra_pct(&e, u));
}

/*
 * The prefetch hit rate on a repeated iteration at 50%, with @director
 * over a link of @gbps GB/s (0: the sim's default, 12). Two points: the
 * prefetcher started the reloads (coverage: (hits + late) / total, which
 * is what its prediction decides), and they were in time (hit rate,
 * which the link's speed also decides).
 */
static void prefetch_rate(const struct model *m, const struct tp_trace *t,
			  const struct tp_replay_result *u,
			  const char *director, double gbps, unsigned todo_flag)
{
	struct tp_replay_opts o = {
		.budget_bytes = u->phys_peak / 2,
		.filter = "delta",
		.director = director,
		.prefetch = 1,
		.bandwidth = gbps,
		.remap_ns = -1,
		/* the prefetcher learns from the iteration before */
		.iterations = 3,
		.thrash_limit = THRASH,
		.extra = SIM_COSTS ",pager.rescue=0",
	};
	struct tp_replay_result r;
	uint64_t misses, total;
	double rate, cover;
	int ret;

	ret = tp_replay_run(t, &o, &r);
	misses = r.reloads > r.prefetch_issued ?
		 r.reloads - r.prefetch_issued : 0;
	total = r.prefetch_hits + r.prefetch_late + misses;
	rate = total ? (double)r.prefetch_hits / (double)total : 0;
	cover = total ? (double)(r.prefetch_hits + r.prefetch_late) /
			(double)total : 0;
	diag("%s repeated 50%% delta/%s %.0f GB/s: %.1f ms for 3 iterations "
	     "(%.1f ms each unconstrained) offloads %llu reloads %llu issued "
	     "%llu hits %llu late %llu misses %llu",
	     m->name, director, gbps ? gbps : 12, (double)r.time_ns / 1e6,
	     (double)u->time_ns / 1e6,
	     (unsigned long long)r.offloads, (unsigned long long)r.reloads,
	     (unsigned long long)r.prefetch_issued,
	     (unsigned long long)r.prefetch_hits,
	     (unsigned long long)r.prefetch_late,
	     (unsigned long long)misses);
	ok(ret == 0 && r.status == TP_REPLAY_OK && total > 0 && cover > 0.90,
	   "%s repeated at 50%%, delta/%s: the prefetcher started %.3f > 0.90 "
	   "of %llu reloads", m->name, director, cover,
	   (unsigned long long)total);
	ok(ret == 0 && r.status == TP_REPLAY_OK && total > 0 && rate > 0.90,
	   "%s repeated at 50%%, delta/%s, %.0f GB/s: prefetch hit rate %.3f "
	   "> 0.90%s", m->name, director, gbps ? gbps : 12, rate,
	   todo(m, todo_flag));
}

int main(void)
{
	const size_t n = sizeof(models) / sizeof(models[0]);

	plan_tests((int)n * (1 + 8 + 2 + 4));
	for (size_t i = 0; i < n; i++) {
		const struct model *m = &models[i];
		struct tp_trace *t = NULL;
		struct tp_replay_result u;
		int ret;

		ret = tp_trace_generate(&m->o, &t);
		if (!ret)
			ret = replay(t, 0, "delta", "delta", &u);
		ok(ret == 0 && u.status == TP_REPLAY_OK && u.evictions == 0 &&
		   u.offloads == 0 && u.time_ns > 0,
		   "%s: unconstrained replay: peak %llu, %.3f ms", m->name,
		   ret ? 0ULL : (unsigned long long)u.phys_peak,
		   ret ? 0.0 : (double)u.time_ns / 1e6);
		if (ret) {
			skip(14, "%s: no trace or no unconstrained replay",
			     m->name);
			tp_trace_free(t);
			continue;
		}
		budgets(m, t, &u);
		against_baselines(m, t, &u);
		prefetch_rate(m, t, &u, "delta", 0, TODO_PREFETCH);
		/* swap only: everything that leaves comes back by copy */
		prefetch_rate(m, t, &u, "offload", 25, TODO_PREFETCH_SWAP);
		tp_trace_free(t);
	}
	return exit_status();
}
