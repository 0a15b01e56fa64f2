/* SPDX-License-Identifier: MIT */
/*
 * Costs on the sim backend, where an op costs exactly what its type
 * charges: each type's moving average (lineage.cost_alpha), and c_r(t),
 * the cost of regenerating t with its evicted ancestors (DTR's e*(t) over
 * union-find classes of evicted tensors).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "tests/tap.h"

static struct tp_ctx *ctx;

/* The cost an op charges is its parameter. */
static uint64_t param_cost(const void *params, size_t len,
			   const size_t *in_bytes, unsigned n_in)
{
	uint64_t c;

	if (len != sizeof(c))
		return 1000;
	memcpy(&c, params, sizeof(c));
	return c;
}

static int nop_launch(const struct tp_op_launch *l)
{
	return 0;	/* sim: never called, there is no data */
}

static const struct tp_op_type priced = {
	.name = "priced", .launch = nop_launch, .cost_ns = param_cost,
};
static const struct tp_op_type other = {
	.name = "other", .launch = nop_launch, .cost_ns = param_cost,
};
static const struct tp_op_type two = {
	.name = "two", .launch = nop_launch, .cost_ns = param_cost,
};

static struct tp_tensor *op(const struct tp_op_type *type, uint64_t cost,
			    struct tp_tensor *a, struct tp_tensor *b)
{
	struct tp_tensor *in[2] = { a, b }, *out = NULL;
	size_t bytes = 65536;
	int ret;

	ret = tp_op_run(ctx, type, &cost, sizeof(cost), in, b ? 2 : 1, &out,
			&bytes, 1);
	if (ret)
		diag("op: %s", tp_strerror(ret));
	return out;
}

static double cr(struct tp_tensor *t)
{
	return tp_lineage_recompute_ns(ctx->lineage, t);
}

/* The evicted ancestor pages c_r counts: what a regeneration maps again. */
static size_t anc(struct tp_tensor *t)
{
	size_t pages = SIZE_MAX;

	tp_lineage_regen_cost(ctx->lineage, t, &pages);
	return pages;
}

static bool regen(struct tp_tensor *t)
{
	return tp_tensor_acquire(ctx, t, TP_READ) && !tp_tensor_release(ctx, t);
}

int main(void)
{
	struct tp_tensor *x0, *b, *c, *d, *e, *g, *t1, *t2, *t3;
	struct tp_tensor *sa, *sb, *ua, *ub;
	double v;

	plan_tests(34);
	ctx = tp_ctx_create("vmm.backend=sim,pager.rescue=0,vmm.chunk_size=64K,pager.budget=64M,pager.slab_fraction=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x0 = tp_tensor_create(ctx, 65536, 0);
	ok(x0 && tp_tensor_acquire(ctx, x0, TP_WRITE) &&
	   !tp_tensor_release(ctx, x0), "an input");

	/* Moving averages: alpha 0.25. */
	ok(tp_lineage_op_cost_ns(ctx->lineage, &two) == 1000,
	   "a type never run costs its prior");
	t1 = op(&two, 1000, x0, NULL);
	ok(tp_lineage_op_cost_ns(ctx->lineage, &two) == 1000, "first run: 1000");
	t2 = op(&two, 2000, x0, NULL);
	ok(tp_lineage_op_cost_ns(ctx->lineage, &two) == 1250, "then 2000: 1250");
	t3 = op(&two, 3000, x0, NULL);
	v = tp_lineage_op_cost_ns(ctx->lineage, &two);
	ok(v == 1687.5, "then 3000: 1687.5 (%g)", v);
	ok_rc(tp_ctl_set(ctx, "lineage.cost_alpha", "1"), "lineage.cost_alpha = 1");
	tp_tensor_free(ctx, op(&two, 500, x0, NULL));
	ok(tp_lineage_op_cost_ns(ctx->lineage, &two) == 500, "alpha 1 follows the last run");
	ok(cr(t2) == 2000 && cr(t3) == 3000, "each record keeps its own cost");
	tp_ctl_set(ctx, "lineage.cost_alpha", "0.25");

	/* c_r over a chain x0 -> b -> c -> d -> e, costs 100..400. */
	b = op(&priced, 100, x0, NULL);
	c = op(&priced, 200, b, NULL);
	d = op(&priced, 300, c, NULL);
	e = op(&priced, 400, d, NULL);
	ok(cr(b) == 100 && cr(e) == 400, "nothing evicted: the op's own cost");
	ok(isinf(cr(x0)), "an input: infinite");
	ok_rc(tp_tensor_evict(ctx, c), "evict c");
	ok(cr(d) == 500 && cr(e) == 400, "c_r(d) = 300 + 200; e unchanged (%g, %g)",
	   cr(d), cr(e));
	ok(anc(d) == 1 && anc(e) == 0 && anc(c) == 0,
	   "d maps c's page again, e and c itself nothing besides their own");
	ok_rc(tp_tensor_evict(ctx, b), "evict b");
	ok(cr(d) == 600, "c_r(d) = 300 + {b, c} (%g)", cr(d));
	ok(anc(d) == 2, "and maps b's and c's pages again (%zu)", anc(d));
	ok(regen(c) && cr(d) == 300, "c regenerated (and b with it): c_r(d) = 300 (%g)",
	   cr(d));
	ok(!tp_tensor_evict(ctx, b) && !tp_tensor_evict(ctx, c) &&
	   !tp_tensor_evict(ctx, d) && cr(e) == 1000,
	   "b, c, d evicted: c_r(e) = 400 + 300 + 200 + 100 (%g)", cr(e));
	ok(anc(e) == 3, "three ancestor pages (%zu)", anc(e));
	/* One class counted once: g reads b and d, both in {b, c, d}. */
	g = op(&other, 50, b, d);
	ok(g && !tp_pager_has_evicted(b) && !tp_pager_has_evicted(d),
	   "g = other(b, d) regenerated its inputs");
	ok(!tp_tensor_evict(ctx, b) && !tp_tensor_evict(ctx, c) &&
	   !tp_tensor_evict(ctx, d) && cr(g) == 650,
	   "c_r(g) = 50 + one class {b, c, d} (%g)", cr(g));
	ok(regen(d) && cr(g) == 50 && cr(e) == 400,
	   "regenerating d brought b, c, d back: c_r(g) = 50, c_r(e) = 400");

	/*
	 * Siblings sa, sb of b, read by ua, ub: with b, sa, sb evicted,
	 * regenerating ua replays sa and b, not sb, whatever was asked
	 * before (classes merged through b would count sb too).
	 */
	sa = op(&priced, 10, b, NULL);
	sb = op(&priced, 20, b, NULL);
	ua = op(&priced, 1, sa, NULL);
	ub = op(&priced, 2, sb, NULL);
	ok(!tp_tensor_evict(ctx, sa) && !tp_tensor_evict(ctx, sb) &&
	   !tp_tensor_evict(ctx, b), "evict b and its readers sa, sb");
	v = cr(ub);
	ok(v == 122 && cr(ua) == 111 && cr(ub) == 122,
	   "siblings: c_r(ua) = 1 + 10 + 100, c_r(ub) = 2 + 20 + 100 "
	   "(%g, %g, then %g)", v, cr(ua), cr(ub));
	ok(anc(ua) == 2 && anc(ub) == 2, "each maps two pages again, not three");
	regen(ua);
	regen(ub);
	tp_tensor_free(ctx, ua);
	tp_tensor_free(ctx, ub);
	tp_tensor_free(ctx, sa);
	tp_tensor_free(ctx, sb);

	/*
	 * An offloaded input of a replay: regenerated when the policy finds
	 * that cheaper than reloading it (DELTA §5.5), reloaded when it
	 * cannot be regenerated.
	 */
	{
		struct tp_lineage_stats l0, l1;
		struct tp_stats s0, s1;
		struct tp_tensor *cheap, *u, *x1, *w;

		cheap = op(&priced, 10, x0, NULL);
		u = op(&priced, 10, cheap, NULL);
		x1 = tp_tensor_create(ctx, 65536, 0);
		ok(x1 && tp_tensor_acquire(ctx, x1, TP_WRITE) &&
		   !tp_tensor_release(ctx, x1), "a second input");
		w = op(&priced, 10, x1, NULL);
		ok(!tp_tensor_offload(ctx, cheap) && !tp_tensor_offload(ctx, x1) &&
		   !tp_sync(ctx) && !tp_tensor_evict(ctx, u) &&
		   !tp_tensor_evict(ctx, w), "inputs offloaded, their readers evicted");
		tp_lineage_get_stats(ctx->lineage, &l0);
		tp_stats_get(ctx, &s0);
		ok(regen(u), "regenerate the reader of a cheap input");
		tp_lineage_get_stats(ctx->lineage, &l1);
		tp_stats_get(ctx, &s1);
		ok(l1.replays - l0.replays == 2 && s1.reloads == s0.reloads,
		   "the input was regenerated, not reloaded");
		ok(regen(w), "regenerate the reader of the uncomputable input");
		tp_lineage_get_stats(ctx->lineage, &l0);
		tp_stats_get(ctx, &s0);
		ok(l0.replays - l1.replays == 1 && s0.reloads > s1.reloads,
		   "the input was reloaded");
		tp_tensor_free(ctx, w);
		tp_tensor_free(ctx, x1);
		tp_tensor_free(ctx, u);
		tp_tensor_free(ctx, cheap);
	}

	/*
	 * A chain longer than the exact walk goes (256): the union-find
	 * classes answer, and count every evicted page of the chain once.
	 */
	{
		enum { LONG = 300 };
		struct tp_tensor **ch = calloc(LONG + 1, sizeof(*ch));
		bool made = ch != NULL, evicted = made;
		double want = 0;

		for (int i = 0; made && i <= LONG; i++) {
			ch[i] = op(&priced, 1 + (uint64_t)i, i ? ch[i - 1] : x0,
				   NULL);
			made = ch[i] != NULL;
		}
		for (int i = 0; made && i < LONG; i++) {
			evicted = evicted && !tp_tensor_evict(ctx, ch[i]);
			want += 1 + i;
		}
		ok(made && evicted, "a chain of %d evicted tensors", LONG);
		v = made ? cr(ch[LONG]) : 0;
		ok(made && v == want + 1 + LONG && anc(ch[LONG]) == LONG,
		   "its end: c_r %g (want %g), %zu ancestor pages", v,
		   want + 1 + LONG, made ? anc(ch[LONG]) : 0);
		for (int i = LONG; made && i >= 0; i--)
			tp_tensor_free(ctx, ch[i]);
		free(ch);
	}

	tp_tensor_free(ctx, g);
	tp_tensor_free(ctx, e);
	tp_tensor_free(ctx, d);
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, b);
	tp_tensor_free(ctx, t1);
	tp_tensor_free(ctx, t2);
	tp_tensor_free(ctx, t3);
	tp_tensor_free(ctx, x0);
	{
		struct tp_lineage_stats st;

		tp_lineage_get_stats(ctx->lineage, &st);
		ok(st.records == 0, "no record left");
	}
	tp_ctx_destroy(ctx);
	return exit_status();
}
