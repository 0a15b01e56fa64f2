/* SPDX-License-Identifier: MIT */
/*
 * The overlap filter's exact search walks c_r only for the candidates
 * whose bound can still win: the choice must be the one scoring every
 * candidate makes. With the evict director and no record, h = c_r/(m*s)
 * (filter_overlap.c), which this test works out by brute force over
 * random candidates; the cost ops give the op's own cost as the floor
 * and count the walks. And where the driver charges per handle (the
 * sim's h200 profile), a small tensor's remap counts in its cost.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "ctx/ctx.h"
#include "pager/hooks.h"
#include "policy/policy.h"
#include "tap.h"
#include "tests/test-rand.h"
#include "tests/vmm-util.h"

#define N	100
#define ROUNDS	40

static uint64_t now;
static double own[N + 1], extra[N + 1];	/* by tensor id */
static unsigned walks;

static uint64_t test_clock(void *priv)
{
	(void)priv;
	return now;
}

/* c_r: the op's own cost and what its evicted ancestry adds. */
static double test_cost(void *priv, const struct tp_tensor *t,
			size_t *anc_pages)
{
	(void)priv;
	walks++;
	*anc_pages = 0;
	return own[t->id] + extra[t->id];
}

static double test_own(void *priv, const struct tp_tensor *t)
{
	(void)priv;
	return own[t->id];
}

static bool test_computable(void *priv, const struct tp_tensor *t)
{
	(void)priv;
	(void)t;
	return true;
}

static const struct tp_cost_ops cost_ops = {
	.recompute_ns = test_cost,
	.own_ns = test_own,
	.computable = test_computable,
};

/* The filter's h, which the smallest of wins. */
static double h(const struct tp_tensor *t)
{
	double x = own[t->id] + extra[t->id];

	return (x < 1 ? 1 : x) / ((double)t->bytes *
				  (double)(now - t->last_access_ns));
}

/*
 * A 2 MiB tensor whose op costs 1 us against a 200 MiB one whose op
 * costs 1 ms, both as old: by c/(m*s) alone the small one goes (4.8e-7
 * against 4.8e-6 per ns of age); with the h200 profile's remap of a
 * handle (tens of us each) the small one costs more than it frees, and
 * the large one goes. With policy.remap_ns set, a cost per chunk that
 * every way out pays per byte, the remap is left out as before.
 */
static void remap_case(void)
{
	static struct tp_tensor t[2];
	const struct tp_victim_ops *ops;
	struct tp_policy *pol;
	struct tp_vmm *vmm;
	struct tp_ctx ctx;
	char why[256];

	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	tp_conf_set(&ctx.conf, "vmm.backend", "sim", "test", 0);
	tp_conf_set(&ctx.conf, "policy.filter", "overlap", "test", 0);
	tp_conf_set(&ctx.conf, "policy.director", "evict", "test", 0);
	tp_conf_set(&ctx.conf, "policy.prefetch", "0", "test", 0);
	vmm = vt_open("sim", 2 << 20, "vmm.sim.profile=h200", why,
		      sizeof(why));
	if (!vmm)
		bail_out("vt_open: %s", why);
	for (int pass = 0; pass < 2; pass++) {
		struct tp_tensor *v = NULL;
		enum tp_leave how;
		int rc;

		if (pass)
			tp_conf_set(&ctx.conf, "policy.remap_ns", "50000",
				    "test", 0);
		pol = tp_policy_create(&ctx.conf, NULL, vmm);
		if (!pol)
			bail_out("tp_policy_create");
		tp_policy_set_clock(pol, test_clock, NULL);
		tp_policy_set_cost_ops(pol, &cost_ops);
		ops = tp_policy_victim_ops(pol);
		now = 2000;
		for (int i = 0; i < 2; i++) {
			memset(&t[i], 0, sizeof(t[i]));
			t[i].id = (uint64_t)i + 1;
			t[i].nr_pages = t[i].resident_pages = i ? 100 : 1;
			t[i].bytes = t[i].nr_pages * (2u << 20);
			t[i].last_access_ns = 1000;
			t[i].computable = true;
			t[i].pol.idx = -1;
			own[t[i].id] = i ? 1000000 : 1000;
			extra[t[i].id] = 0;
			ops->add(ops->priv, &t[i]);
		}
		rc = ops->choose(ops->priv, 1, false, &v, &how);
		if (!pass)
			ok(rc == 0 && v == &t[1],
			   "per-handle remap (h200 profile): the 200 MiB tensor goes, not the 2 MiB one (%s)",
			   v == &t[1] ? "200 MiB" : "2 MiB");
		else
			ok(rc == 0 && v == &t[0],
			   "policy.remap_ns set (per chunk): the 2 MiB tensor goes, by c/(m*s) (%s)",
			   v == &t[0] ? "2 MiB" : "200 MiB");
		for (int i = 0; i < 2; i++)
			ops->del(ops->priv, &t[i]);
		tp_policy_destroy(pol);
	}
	tp_vmm_close(vmm);
}

int main(void)
{
	static struct tp_tensor t[N];
	const struct tp_victim_ops *ops;
	struct tp_policy *pol;
	struct tp_ctx ctx;
	uint64_t seed = 20261126;
	unsigned wrong = 0, pruned = 0, rounds_pruning = 0;

	plan_tests(6);
	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	tp_conf_set(&ctx.conf, "policy.filter", "overlap", "test", 0);
	tp_conf_set(&ctx.conf, "policy.director", "evict", "test", 0);
	tp_conf_set(&ctx.conf, "policy.prefetch", "0", "test", 0);
	pol = tp_policy_create(&ctx.conf, NULL, NULL);
	if (!pol)
		bail_out("tp_policy_create");
	tp_policy_set_clock(pol, test_clock, NULL);
	tp_policy_set_cost_ops(pol, &cost_ops);
	ops = tp_policy_victim_ops(pol);

	now = 1000000;
	for (int i = 0; i < N; i++) {
		t[i].id = (uint64_t)i + 1;
		t[i].nr_pages = 1;
		t[i].resident_pages = 1;
		t[i].computable = true;
		t[i].pol.idx = -1;
	}
	for (unsigned r = 0; r < ROUNDS; r++) {
		struct tp_tensor *v = NULL;
		enum tp_leave how;
		int best = 0;

		/* Sizes, ages and costs over orders of magnitude; half the
		 * rounds with ancestries far dearer than the op alone. */
		for (int i = 0; i < N; i++) {
			t[i].bytes = 4096 + tt_rand(&seed) % (64u << 20);
			t[i].last_access_ns = now - 1 - tt_rand(&seed) % 900000;
			own[t[i].id] = 1 + (double)(tt_rand(&seed) % 100000);
			extra[t[i].id] = r % 2 ? (double)(tt_rand(&seed) %
							   10000000) : 0;
			ops->add(ops->priv, &t[i]);
		}
		for (int i = 1; i < N; i++)
			if (h(&t[i]) < h(&t[best]))
				best = i;
		walks = 0;
		if (ops->choose(ops->priv, 1, false, &v, &how) || v != &t[best])
			wrong++;
		if (walks < N) {
			rounds_pruning++;
			pruned += N - walks;
		}
		for (int i = 0; i < N; i++)
			ops->del(ops->priv, &t[i]);
		now += 1000000;
	}
	ok(wrong == 0, "%u rounds of %d candidates: the smallest c/(m*s) chosen every time (%u wrong)",
	   ROUNDS, N, wrong);
	ok(rounds_pruning == ROUNDS,
	   "every round walked c_r for fewer than all candidates (%u of %u rounds)",
	   rounds_pruning, ROUNDS);
	diag("c_r walks left out: %u of %u", pruned, ROUNDS * N);

	/*
	 * Every bound equal (the same size, age and own cost), the walks
	 * decide: the one whose ancestry is cheapest, of all.
	 */
	for (int i = 0; i < N; i++) {
		t[i].bytes = 1 << 20;
		t[i].last_access_ns = now - 1000;
		own[t[i].id] = 100;
		extra[t[i].id] = 1000 + (i == 57 ? 0 : i + 1);
		ops->add(ops->priv, &t[i]);
	}
	{
		struct tp_tensor *v = NULL;
		enum tp_leave how;

		int rc;

		walks = 0;
		rc = ops->choose(ops->priv, 1, false, &v, &how);
		ok(rc == 0 && v == &t[57],
		   "equal bounds: the cheapest ancestry chosen (tensor %lld)",
		   v ? (long long)(v - t) : -1LL);
		ok(walks == N, "with equal bounds, all %d walked (%u)", N,
		   walks);
	}
	for (int i = 0; i < N; i++)
		ops->del(ops->priv, &t[i]);
	tp_policy_destroy(pol);
	remap_case();
	return exit_status();
}
