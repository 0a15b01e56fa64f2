/* SPDX-License-Identifier: MIT */
/*
 * The planned mode (policy.plan = tsplit). At the end of each iteration
 * that followed a recorded one, TSPLIT's planner (plan.h) plans the next
 * iteration from the record of this one (the prefetcher's: the program's
 * ops, their costs, the tensors each read and wrote). During the next,
 * the plan chooses the victims and how they leave (offload what it swaps,
 * evict what it recomputes or splits, drop first what the record says is
 * done with), offloads what it swaps as soon as the access before the gap
 * is over, and runs its split ops in parts; the prefetcher brings swapped
 * tensors back ahead of use.
 *
 * The plan holds while the iteration repeats the record: each op the
 * same as the record's at that place (its inputs, outputs and cut), and
 * the room the same as it was planned for. From the first op that is not,
 * to the end of the iteration, and for any choice the plan has no victim
 * for, the filter and director decide (counted in stats.plan_fallbacks).
 */
#ifndef TP_POLICY_PLANNED_H
#define TP_POLICY_PLANNED_H

#include <stdbool.h>
#include <stdint.h>

#include "pager/hooks.h"
#include "pager/tensor.h"

struct tp_policy;
struct tp_planned;
struct tp_stats;

/* What one choice is for (the arguments of choose() in victim.c). */
struct tp_planned_ask {
	bool ahead;			/* ahead of need (choose_ahead) */
	const struct tp_tensor *ahead_of;	/* the prefetch room is for */
	bool no_offload;		/* host swap full */
	double max_cost;		/* only victims leaving for less, ns */
};

struct tp_planned *tp_planned_create(void);
void tp_planned_destroy(struct tp_planned *pl);

/* Whether policy.plan is on: the hooks below then do something. */
bool tp_planned_on(const struct tp_policy *pol);

/* Iteration marks (after the prefetcher's own). */
void tp_planned_iteration_begin(struct tp_policy *pol);
void tp_planned_iteration_end(struct tp_policy *pol);

/**
 * tp_planned_choose() - the plan's victim for @ask, and how it leaves.
 * Return 0 with *@victim and *@how set (a plan hit); -ENOENT when the
 * plan has none and the filter and director should choose (a
 * fallback); -EAGAIN when the plan says nothing leaves (a release ahead
 * of need beyond what it swaps).
 */
int tp_planned_choose(struct tp_policy *pol, const struct tp_planned_ask *ask,
		      struct tp_tensor **victim, enum tp_leave *how);

/**
 * tp_planned_release_bytes() - while a plan holds, the bytes it swaps out
 * from the current op on that are still resident, into *@bytes: what to
 * release ahead of need. False when no plan holds.
 */
bool tp_planned_release_bytes(struct tp_policy *pol, uint64_t *bytes);

/* Fill stats.plans, plan_hits, plan_fallbacks, plan_breaks. */
void tp_planned_stats(struct tp_policy *pol, struct tp_stats *st);

#endif /* TP_POLICY_PLANNED_H */
