/* SPDX-License-Identifier: MIT */
/*
 * Filters: which tensor leaves. Every heuristic of policy.filter is a score
 * whose smallest value leaves first (the papers' convention) and whose
 * inverse, the "value", is a line in time:
 *
 *	value(now) = k * (now - a) + g,	score(now) = 1 / value(now)
 *
 * so the victim index only has to find the largest value at a given now.
 * The staleness s = now - a grows with time, which is why the order of two
 * tensors can change while neither is touched (see index.c).
 *
 * The overlap filter is no line (its cost and distance follow the link's
 * queue and the record's cursor): filter_overlap.c scores its candidates
 * afresh at each choice, and its keys only fill the index.
 */
#ifndef TP_POLICY_FILTER_H
#define TP_POLICY_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/conf.h"
#include "pager/tensor.h"

/* The key of one candidate: a line, evaluated by tp_filter_value(). */
struct tp_pol_key {
	double k;	/* slope: value gained per ns of staleness */
	double g;	/* value at now == a */
	uint64_t a;	/* time origin: the last access */
	double c;	/* c_r the key was built with (cost-based filters) */
	double m;	/* m(t) the key was built with */
};

/* Cost floor in ns: a recompute never counts as free (avoids k = inf). */
#define TP_FILTER_MIN_COST_NS	1.0

/**
 * tp_filter_mem() - m(t): the bytes @t would free by leaving now, i.e. its
 * size times the fraction of its pages that are resident.
 */
double tp_filter_mem(const struct tp_tensor *t);

/* What a filter's key reads as its cost (struct tp_filter_traits). */
enum tp_filter_cost {
	TP_FILTER_COST_NONE,
	TP_FILTER_COST_RECOMPUTE,	/* c_r: the tensor's own recompute */
	TP_FILTER_COST_EVICTED,		/* DTR's h: over its evicted
					 * neighbourhood and views */
};

/* How a filter's victim is found. */
enum tp_filter_choice {
	TP_FILTER_CHOOSE_INDEX,		/* the largest value in the index */
	TP_FILTER_CHOOSE_AFRESH,	/* every candidate scored at each
					 * choice (filter_overlap.c) */
	TP_FILTER_CHOOSE_WINDOW,	/* Coop's window over the contiguous
					 * pool (filter_coop.c); the index
					 * elsewhere */
};

/*
 * What the policy must know of a filter beyond its key, filled in by the
 * filter's own table entry, so that nothing outside filter.c asks which
 * filter it is.
 */
struct tp_filter_traits {
	enum tp_filter_cost cost;
	enum tp_filter_choice choice;
	/* reads the recorded iteration's next use of a tensor */
	bool next_use;
	/* releases nothing ahead of need (the watermark hook gives 0) */
	bool demand_only;
};

/* tp_filter_traits() - filter @kind's (DELTA's for an unknown kind). */
const struct tp_filter_traits *tp_filter_traits(int kind);

/**
 * tp_filter_uses_cost() - whether filter @kind reads a recompute cost
 * (dtr, msps, coop). Keys of those filters go stale when it changes; the
 * policy checks the winner's cost before trusting it.
 */
bool tp_filter_uses_cost(int kind);

/**
 * tp_filter_key() - build @t's key for filter @kind.
 * @c_r: recompute cost in ns (INFINITY when @t cannot be regenerated);
 *       ignored by filters that do not use it.
 */
void tp_filter_key(int kind, const struct tp_tensor *t, double c_r,
		   struct tp_pol_key *key);

/** tp_filter_value() - the key's value at @now (larger leaves first). */
static inline double tp_filter_value(const struct tp_pol_key *key,
				     uint64_t now)
{
	return key->k * (double)(int64_t)(now - key->a) + key->g;
}

/**
 * tp_filter_score() - the paper's score of @t at @now, computed directly
 * from its formula (not through a key): what tests and the brute-force
 * reference compare the index against. Staleness below zero counts as 0;
 * a zero denominator gives INFINITY.
 */
double tp_filter_score(int kind, const struct tp_tensor *t, double c_r,
		       uint64_t now);

#endif /* TP_POLICY_FILTER_H */
