/* SPDX-License-Identifier: MIT */
/*
 * Each filter heuristic picks the victim its paper's formula says, on
 * hand-built tensors: the scores are computed here from the formulas
 * (DELTA eq. 1-3, DTR c/(m*s), Capuchin's MSPS, Coop's c/s), not through
 * the library, and the expected victim is also named by hand.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "ctx/ctx.h"
#include "policy/policy.h"
#include "tap.h"
#include "tests/policy-testenv.h"

#define N 4

/* The papers' scores, written out; smallest leaves first. */
static double score(const char *filter, const struct tp_tensor *t)
{
	double m = (double)t->bytes, s = (double)(now - t->last_access_ns);
	double c = cost[t->id];

	if (!strcmp(filter, "delta"))
		return 1 / (m * s);		/* DELTA eq. 1 */
	if (!strcmp(filter, "lru"))
		return 1 / s;			/* DELTA eq. 2 */
	if (!strcmp(filter, "greedy"))
		return 1 / m;			/* DELTA eq. 3 */
	if (!strcmp(filter, "dtr"))
		return c / (m * s);		/* DTR */
	if (!strcmp(filter, "msps"))
		return c / m;			/* Capuchin: 1 / MSPS */
	return c / s;				/* Coop §3.3 */
}

static void init_tensor(struct tp_tensor *t, uint64_t id, size_t bytes,
			uint64_t last, double c)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->bytes = bytes;
	t->nr_pages = 1;
	t->resident_pages = 1;
	t->last_access_ns = last;
	t->computable = true;
	t->pol.idx = -1;
	cost[id] = c;
}

int main(void)
{
	static const struct {
		const char *filter;
		const char *expect;	/* the victim, worked out by hand */
		uint64_t at;
	} cases[] = {
		/* at 1000: m*s = A 40000, B 80000, C 10000, D 9000 */
		{ "delta", "B", 1000 },
		/* at 1200: A 120000, B 100000, C 210000, D 11000 */
		{ "delta", "C", 1200 },
		{ "lru", "D", 1000 },
		{ "greedy", "C", 1000 },
		/* c/(m*s): A 1/40000, B 1000/80000, C 10/10000, D 1/9000 */
		{ "dtr", "A", 1000 },
		/* c/m: A 1/400, B 10, C 10/1000, D 1/10 */
		{ "msps", "A", 1000 },
		/* c/s: A 1/100, B 1000/800, C 10/10, D 1/900 */
		{ "coop", "D", 1000 },
	};
	const char *names = "ABCD";
	struct tp_tensor t[N];
	struct tp_ctx ctx;
	struct tp_policy *pol;
	const struct tp_victim_ops *ops;
	size_t nc = sizeof(cases) / sizeof(cases[0]);

	plan_tests(3 * 7 + 3 + 4);
	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	/* The director must not matter: everything may be evicted. */
	tp_conf_set(&ctx.conf, "policy.director", "evict", "test", 0);
	pol = pt_policy(&ctx, true);
	ops = tp_policy_victim_ops(pol);

	init_tensor(&t[0], 1, 400, 900, 1);	/* A */
	init_tensor(&t[1], 2, 100, 200, 1000);	/* B */
	init_tensor(&t[2], 3, 1000, 990, 10);	/* C */
	init_tensor(&t[3], 4, 10, 100, 1);	/* D */
	for (int i = 0; i < N; i++)
		ops->add(ops->priv, &t[i]);

	for (size_t i = 0; i < nc; i++) {
		struct tp_tensor *v = NULL;
		enum tp_leave how;
		int best = 0, rc;

		now = cases[i].at;
		tp_conf_set(&ctx.conf, "policy.filter", cases[i].filter,
			    "test", 0);
		for (int j = 1; j < N; j++)
			if (score(cases[i].filter, &t[j]) <
			    score(cases[i].filter, &t[best]))
				best = j;
		rc = ops->choose(ops->priv, 1, false, &v, &how);
		ok(rc == 0 && v == &t[best],
		   "%s at %llu: chose %c, smallest score is %c", cases[i].filter,
		   (unsigned long long)now, v ? names[v - t] : '-',
		   names[best]);
		ok(names[best] == cases[i].expect[0],
		   "%s at %llu: the formula agrees with the hand-worked %s",
		   cases[i].filter, (unsigned long long)now, cases[i].expect);
		ok(v && how == TP_LEAVE_EVICT, "%s: the evict director evicts",
		   cases[i].filter);
	}

	/*
	 * Time only moves forward. A touch makes C fresh: delta at 1200
	 * (A 120000, B 100000, C 0, D 11000) prefers A.
	 */
	tp_conf_set(&ctx.conf, "policy.filter", "delta", "test", 0);
	now = 1200;
	t[2].last_access_ns = 1200;
	ops->touch(ops->priv, &t[2]);
	{
		struct tp_tensor *v = NULL;
		enum tp_leave how;

		ok(ops->choose(ops->priv, 1, false, &v, &how) == 0 &&
		   v == &t[0], "after touching C, delta chooses A");
		/* The pager dels the victim; the next one is B. */
		ops->del(ops->priv, v);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == 0 &&
		   v == &t[1], "after A left, delta chooses B");
		ops->del(ops->priv, &t[2]);
		ops->del(ops->priv, &t[3]);
		ops->del(ops->priv, &t[1]);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == -ENOENT,
		   "no candidates: -ENOENT");
	}

	/* Flags that forbid leaving keep a tensor out of the candidates. */
	{
		struct tp_tensor np, both;
		struct tp_tensor *v = NULL;
		enum tp_leave how;

		init_tensor(&np, 1, 4096, 0, 1);
		np.flags = TP_NO_PAGING;
		init_tensor(&both, 2, 4096, 0, 1);
		both.flags = TP_EVICT_PINNED | TP_OFFLOAD_PINNED;
		ops->add(ops->priv, &np);
		ops->add(ops->priv, &both);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == -ENOENT,
		   "TP_NO_PAGING and doubly pinned tensors never leave");
		/* Partially resident: m is the resident part. */
		init_tensor(&t[0], 1, 4000, 0, 1);
		t[0].nr_pages = 4;
		t[0].resident_pages = 1;	/* m = 1000 */
		init_tensor(&t[1], 2, 1500, 0, 1);
		tp_conf_set(&ctx.conf, "policy.filter", "greedy", "test", 0);
		ops->add(ops->priv, &t[0]);
		ops->add(ops->priv, &t[1]);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == 0 &&
		   v == &t[1],
		   "greedy counts only resident pages (1500 > 4000/4)");
		ops->del(ops->priv, &t[1]);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == 0 &&
		   v == &t[0], "the partly resident tensor is next");
		ops->del(ops->priv, &t[0]);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == -ENOENT,
		   "and then none");
	}
	tp_policy_destroy(pol);
	return exit_status();
}
