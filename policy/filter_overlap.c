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
 * copies compute does not hide (TSPLIT eq. 3); and the remap of its
 * handles where the driver charges per handle (a device, or the sim's
 * profiles of one): a small tensor then costs as much to send away as a
 * large one, for little room, where a cost per chunk (the keys') is paid
 * per byte freed by every way out and left out. Not for an eviction
 * whose range is the room being made, though: the tensor the room is for
 * takes it mapped (pager.move_evicted), so that tensor's map and this
 * one's unmap both go, and only the remap of its return stays, as it
 * would for any other victim.
 *
 * d(t) the time to its next use as the last iteration's record predicts
 * it (Belady's distance, which Capuchin reads off its measured access
 * pattern), or its staleness s (DELTA eq. 1, DTR) where the record says
 * nothing. It is DTR's c/(m*s) with the director's cost for c and the
 * predicted distance for s: a tensor whose copies hide entirely costs
 * nothing, and goes before any that must be recomputed or waited for.
 *
 * x and d move with the link's queue and the record's cursor, not as lines
 * in time, so the victim index cannot order them: each choice scores every
 * candidate afresh (policy.search = exact), or ceil(sqrt(N)) drawn at
 * random (sample, as DTR does). The exact search ranks the candidates by a
 * bound first, and walks the evicted ancestry (c_r, most of a choice's
 * time) only for those that can still win (choose_exact()).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/array.h"
#include "policy/filter_overlap.h"
#include "policy/policy_priv.h"

/* What the choice is for (the arguments of choose() in victim.c). */
static bool eligible(struct tp_policy *pol, const struct tp_overlap_ask *ask,
		     const struct tp_tensor *t, struct tp_director_in *in,
		     enum tp_leave *how)
{
	if (!tp_director_decide(tp_pol_director(pol), in, how))
		return false;
	if (ask->ahead)
		return tp_policy_ahead_ok(pol, t, ask->ahead_of, *how, in);
	return tp_policy_leave_cost(pol, *how, in) < ask->max_cost;
}

/*
 * Whether @t, evicted, would leave its range as the room being made
 * (tp_pager_moves_into_room()): its remap is then not charged.
 */
static bool moves_into_room(const struct tp_policy *pol,
			    const struct tp_tensor *t)
{
	return pol->pager && tp_pager_moves_into_room(pol->pager, t);
}

/*
 * 1/h of @t leaving by @how with director input @in at @now: m*d/x, with
 * its remap in x where @remap (per handle) unless an eviction @moves into
 * the room being made.
 */
static double value(const struct tp_tensor *t,
		    const struct tp_director_in *in, enum tp_leave how,
		    bool remap, bool moves, uint64_t now)
{
	double x = tp_director_exposed_ns(in, how);
	double d = tp_policy_distance(t, in->reuse_ns, now);

	if (remap && !(moves && how == TP_LEAVE_EVICT))
		x += in->remap_ns;
	if (x < TP_FILTER_MIN_COST_NS)
		x = TP_FILTER_MIN_COST_NS;
	return in->m * d / x;
}

/* One candidate of a choice: its director input, less c_r, and a bound. */
struct tp_overlap_cand {
	struct tp_tensor *t;
	struct tp_director_in in;
	uint64_t next;			/* predicted next use */
	double bound;			/* value() is at most this */
	size_t slot;
	bool moves;			/* moves_into_room() */
};

/* What the ranking sorts: small, so that the sort moves little. */
struct tp_overlap_rank {
	double bound;
	uint32_t i;			/* into the candidates, slot order */
};

/*
 * An upper bound on value() before c_r is known: x is at least the
 * cheaper of the offload's exposed copies (known) and the eviction's floor
 * (the op that made it, tp_policy_regen_floor(); c_r adds the evicted
 * ancestry, a projection and a thrash penalty, all of which only raise
 * it), and no remap where an eviction moves into the room.
 */
static double value_bound(struct tp_policy *pol, const struct tp_tensor *t,
			  const struct tp_director_in *in, bool remap,
			  bool moves, uint64_t now)
{
	double d = tp_policy_distance(t, in->reuse_ns, now);
	double xo = tp_director_exposed_ns(in, TP_LEAVE_OFFLOAD);
	double xe = in->no_reuse ? 0 : tp_policy_regen_floor(pol, t);
	double x = xo < xe ? xo : xe;

	if (remap && !moves)
		x += in->remap_ns;
	if (x < TP_FILTER_MIN_COST_NS)
		x = TP_FILTER_MIN_COST_NS;
	return in->m * d / x;
}

/* Largest bound first; the index's order among equals. */
static int by_bound(const void *a, const void *b)
{
	const struct tp_overlap_rank *x = a, *y = b;

	if (x->bound != y->bound)
		return x->bound > y->bound ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Whether (v, m, slot) beats the best so far: the exact scan's order. */
static bool beats(double v, double m, size_t slot, bool have, double best_v,
		  double best_m, size_t best_slot)
{
	if (!have || v > best_v)
		return true;
	if (v < best_v)
		return false;
	/* ties: the larger frees more, then the index's first */
	return m > best_m || (m == best_m && slot < best_slot);
}

/*
 * Every candidate scored, as DTR's exact search does, but c_r (the walk
 * over the evicted ancestry, most of a choice's time) only for those
 * whose bound can still beat the best found: ranked by bound, the scan
 * stops at the first that cannot. The choice is the one scoring them
 * all in the index's order would make.
 */
static int choose_exact(struct tp_policy *pol,
			const struct tp_overlap_ask *ask, uint64_t now,
			struct tp_tensor **victim, enum tp_leave *how)
{
	size_t slots = tp_pol_index_slots(pol->idx), n = 0;
	struct tp_overlap_cand *c;
	struct tp_overlap_rank *rank;
	enum tp_leave best_how = TP_LEAVE_EVICT;
	double best_v = -INFINITY, best_m = 0;
	size_t best_slot = 0;
	struct tp_tensor *best = NULL;
	bool remap = tp_policy_remap_per_handle(pol);

	if (tp_pol_index_count(pol->idx) > pol->ocand_cap) {
		size_t cap = pol->ocand_cap;

		c = tp_array_grow(pol->ocand, &cap,
				  tp_pol_index_count(pol->idx), sizeof(*c), 64);
		if (!c)
			return -EAGAIN;	/* scan them one by one instead */
		pol->ocand = c;
		rank = realloc(pol->orank, cap * sizeof(*rank));
		if (!rank)
			return -EAGAIN;
		pol->orank = rank;
		pol->ocand_cap = cap;
	}
	c = pol->ocand;
	rank = pol->orank;
	for (size_t s = 0; s < slots; s++) {
		struct tp_tensor *t = tp_pol_index_at(pol->idx, s);
		struct tp_overlap_cand *k;

		if (!t || n == pol->ocand_cap)
			continue;
		k = &c[n++];
		k->t = t;
		k->slot = s;
		tp_policy_director_in_begin(pol, t, ask->no_offload, &k->in,
					    &k->next);
		k->in.ahead = ask->ahead;
		k->moves = remap && moves_into_room(pol, t);
		k->bound = value_bound(pol, t, &k->in, remap, k->moves, now);
		rank[n - 1] = (struct tp_overlap_rank){ k->bound,
							(uint32_t)(n - 1) };
	}
	qsort(rank, n, sizeof(*rank), by_bound);
	for (size_t i = 0; i < n; i++) {
		struct tp_overlap_cand *k = &c[rank[i].i];
		enum tp_leave h;
		double v;

		if (best && k->bound < best_v)
			break;		/* nor any after it */
		tp_policy_director_in_cost(pol, k->t, &k->in, k->next);
		if (!eligible(pol, ask, k->t, &k->in, &h))
			continue;
		v = value(k->t, &k->in, h, remap, k->moves, now);
		if (beats(v, k->in.m, k->slot, best, best_v, best_m,
			  best_slot)) {
			best = k->t;
			best_how = h;
			best_v = v;
			best_m = k->in.m;
			best_slot = k->slot;
		}
	}
	if (!best)
		return -ENOENT;
	*victim = best;
	*how = best_how;
	return 0;
}

/* Score the candidates one by one, all in the index's order (exact) or
 * ceil(sqrt(N)) drawn at random (sample). */
static int choose_scan(struct tp_policy *pol, const struct tp_overlap_ask *ask,
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
	bool remap = tp_policy_remap_per_handle(pol);

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
		v = value(t, &in, h, remap, remap && moves_into_room(pol, t),
			  now);
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

int tp_overlap_choose(struct tp_policy *pol, const struct tp_overlap_ask *ask,
		      uint64_t now, struct tp_tensor **victim,
		      enum tp_leave *how)
{
	int ret;

	if (!tp_pol_index_count(pol->idx))
		return -ENOENT;
	if (pol->search != TP_SEARCH_SAMPLE) {
		ret = choose_exact(pol, ask, now, victim, how);
		if (ret != -EAGAIN)
			return ret;
	}
	return choose_scan(pol, ask, now, victim, how);
}
