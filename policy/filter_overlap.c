/* SPDX-License-Identifier: MIT */
/*
 * The overlap filter (policy.filter = overlap): which tensor leaves when
 * leaving may be an offload whose copies overlap compute.
 *
 *	h(t) = x(t) / (m(t) * d(t)),	smallest first
 *
 * m(t) the bytes it frees. x(t) what its leaving costs the steps that
 * wait, for the way out the director takes (tp_director_exposed_ns()):
 * an eviction its recompute c_r (DTR's e*), an offload the part of its
 * copies compute does not hide (TSPLIT eq. 3); not the remap, which every
 * way out pays per byte freed, so that it orders nothing. d(t) the time to its next use as the last iteration's
 * record predicts it (Belady's distance, which Capuchin reads off its
 * measured access pattern), or its staleness s (DELTA eq. 1, DTR) where
 * the record says nothing. It is DTR's c/(m*s) with the director's cost
 * for c and the predicted distance for s: a tensor whose copies hide
 * entirely costs nothing, and goes before any that must be
 * recomputed or waited for.
 *
 * x and d move with the link's queue and the record's cursor, not as lines
 * in time, so the victim index cannot order them: each choice scores every
 * candidate afresh (policy.search = exact), or ceil(sqrt(N)) drawn at
 * random (sample, as DTR does).
 */
#include "config.h"

#include <errno.h>
#include <math.h>

#include "policy/filter_overlap.h"
#include "policy/policy_priv.h"

/* What the choice is for (the arguments of choose() in victim.c). */
static bool eligible(struct tp_policy *pol, const struct tp_overlap_ask *ask,
		     const struct tp_tensor *t, struct tp_director_in *in,
		     enum tp_leave *how)
{
	if (!tp_director_decide(pol->conf->policy_director, in, how))
		return false;
	if (ask->ahead)
		return tp_policy_ahead_ok(pol, t, ask->ahead_of, *how, in);
	return tp_policy_leave_cost(pol, *how, in) < ask->max_cost;
}

/* 1/h of @t leaving by @how with director input @in at @now: m*d/x. */
static double value(const struct tp_tensor *t,
		    const struct tp_director_in *in, enum tp_leave how,
		    uint64_t now)
{
	double x = tp_director_exposed_ns(in, how);
	double d = tp_policy_distance(t, in->reuse_ns, now);

	if (x < TP_FILTER_MIN_COST_NS)
		x = TP_FILTER_MIN_COST_NS;
	return in->m * d / x;
}

int tp_overlap_choose(struct tp_policy *pol, const struct tp_overlap_ask *ask,
		      uint64_t now, struct tp_tensor **victim,
		      enum tp_leave *how)
{
	size_t slots = tp_pol_index_slots(pol->idx);
	size_t n = tp_pol_index_count(pol->idx);
	bool sample = pol->search == TP_SEARCH_SAMPLE;
	size_t looks = sample ? (size_t)ceil(sqrt((double)n)) : slots;
	struct tp_tensor *best = NULL;
	enum tp_leave best_how = TP_LEAVE_EVICT;
	double best_v = -INFINITY, best_m = 0;

	if (!n)
		return -ENOENT;
	for (size_t i = 0, seen = 0; i < (sample ? 64 * looks : slots) &&
	     seen < looks; i++) {
		size_t s = sample ? (size_t)(tp_policy_rand(pol) % slots) : i;
		struct tp_tensor *t = tp_pol_index_at(pol->idx, s);
		struct tp_director_in in;
		enum tp_leave h;
		double v;

		if (!t)
			continue;
		seen++;
		tp_policy_director_in(pol, t, ask->no_offload, &in);
		in.ahead = ask->ahead;
		if (!eligible(pol, ask, t, &in, &h))
			continue;
		v = value(t, &in, h, now);
		/* ties: the larger frees more */
		if (!best || v > best_v || (v == best_v && in.m > best_m)) {
			best = t;
			best_how = h;
			best_v = v;
			best_m = in.m;
		}
	}
	if (!best)
		return -ENOENT;
	*victim = best;
	*how = best_how;
	return 0;
}
