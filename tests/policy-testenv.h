/* SPDX-License-Identifier: MIT */
/*
 * What the policy's unit tests share: a clock they move by hand and
 * recompute costs they set per tensor id, behind a policy made on them.
 */
#ifndef TP_TESTS_POLICY_TESTENV_H
#define TP_TESTS_POLICY_TESTENV_H

#include <stdbool.h>
#include <stdint.h>

#include "ctx/ctx.h"
#include "policy/policy.h"

#define PT_IDS 128

extern uint64_t now;		/* the policy's clock, ns */
extern double cost[PT_IDS];	/* by tensor id; INFINITY: uncomputable */
extern size_t anc[PT_IDS];	/* evicted ancestor pages, by tensor id */

/**
 * pt_policy() - a policy on @ctx (its configuration set up by the caller)
 * with the clock above and, when @costs, the costs above; bails out of the
 * test on failure.
 */
struct tp_policy *pt_policy(struct tp_ctx *ctx, bool costs);

#endif /* TP_TESTS_POLICY_TESTENV_H */
