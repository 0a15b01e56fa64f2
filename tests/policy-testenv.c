/* SPDX-License-Identifier: MIT */
/* The policy tests' clock and costs (policy-testenv.h). */
#include "config.h"

#include <math.h>

#include "tests/policy-testenv.h"
#include "tests/tap.h"

uint64_t now;
double cost[PT_IDS];
size_t anc[PT_IDS];

static uint64_t test_clock(void *priv)
{
	return now;
}

static double test_cost(void *priv, const struct tp_tensor *t,
			size_t *anc_pages)
{
	*anc_pages = anc[t->id];
	return cost[t->id];
}

static bool test_computable(void *priv, const struct tp_tensor *t)
{
	return !isinf(cost[t->id]);
}

static const struct tp_cost_ops cost_ops = {
	.recompute_ns = test_cost,
	.computable = test_computable,
};

struct tp_policy *pt_policy(struct tp_ctx *ctx, bool costs)
{
	struct tp_policy *pol = tp_policy_create(&ctx->conf, ctx->pager, ctx->vmm);

	if (!pol)
		bail_out("tp_policy_create");
	tp_policy_set_clock(pol, test_clock, NULL);
	if (costs)
		tp_policy_set_cost_ops(pol, &cost_ops);
	return pol;
}
