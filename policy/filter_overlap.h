/* SPDX-License-Identifier: MIT */
/*
 * The overlap filter: h = x/(m*d), the exposed cost of the director's way
 * out over the bytes freed times the time to the predicted next use (see
 * filter_overlap.c).
 */
#ifndef TP_POLICY_FILTER_OVERLAP_H
#define TP_POLICY_FILTER_OVERLAP_H

#include <stdbool.h>
#include <stdint.h>

#include "pager/hooks.h"
#include "pager/tensor.h"
#include "policy/director.h"

struct tp_policy;

/* One choice: what it is for. */
struct tp_overlap_ask {
	bool ahead;			/* ahead of need (choose_ahead) */
	const struct tp_tensor *ahead_of;	/* the prefetch room is for */
	bool no_offload;		/* host swap full */
	double max_cost;		/* only victims leaving for less, ns */
};

/**
 * tp_overlap_choose() - the candidate with the smallest h that may leave
 * as @ask says, and how. Return 0, or -ENOENT when none may.
 */
int tp_overlap_choose(struct tp_policy *pol, const struct tp_overlap_ask *ask,
		      uint64_t now, struct tp_tensor **victim,
		      enum tp_leave *how);

#endif /* TP_POLICY_FILTER_OVERLAP_H */
