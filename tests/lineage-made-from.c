/* SPDX-License-Identifier: MIT */
/*
 * tp_lineage_made_from(): the tensors alive that a replayable record
 * reading a tensor made, each of which, should it leave, its
 * regeneration would read that tensor again for. On sim:
 *
 *	b = op(a), c = op(a, b), d = op(b) freed, e = nondet(a)
 *
 * made from a: b and c (not e: its record cannot replay); from b: c
 * (not d: freed); from c: none.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"

#define CHUNK	(64u << 10)

struct seen {
	const struct tp_tensor *t[8];
	unsigned n;
};

static void note(void *priv, const struct tp_tensor *o)
{
	struct seen *s = priv;

	if (s->n < 8)
		s->t[s->n] = o;
	s->n++;
}

static bool has(const struct seen *s, const struct tp_tensor *t)
{
	for (unsigned i = 0; i < s->n && i < 8; i++)
		if (s->t[i] == t)
			return true;
	return false;
}

static struct seen made_from(struct tp_ctx *ctx, const struct tp_tensor *t)
{
	struct seen s = { .n = 0 };

	tp_lineage_made_from(ctx->lineage, t, note, &s);
	return s;
}

int main(void)
{
	struct tp_tensor *x0, *a, *b, *c, *d, *e;
	struct tp_ctx *ctx;
	struct seen s;

	plan_tests(3);
	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,"
			    "pager.budget=64M,pager.rescue=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x0 = tops_written(ctx, CHUNK);
	a = tops_nop_run(ctx, x0, NULL, CHUNK);
	b = tops_nop_run(ctx, a, NULL, CHUNK);
	c = tops_nop_run(ctx, a, b, CHUNK);
	d = tops_nop_run(ctx, b, NULL, CHUNK);
	e = tops_run1(ctx, &tops_nondet, NULL, 0, a, CHUNK);
	if (!e)
		bail_out("nondet: %s", tp_last_error(ctx));
	tp_tensor_free(ctx, d);

	s = made_from(ctx, a);
	ok(s.n == 2 && has(&s, b) && has(&s, c) && !has(&s, e),
	   "made from a: b and c, not e (nondeterministic): %u", s.n);
	s = made_from(ctx, b);
	ok(s.n == 1 && has(&s, c), "made from b: c, not d (freed): %u", s.n);
	s = made_from(ctx, c);
	ok(s.n == 0, "made from c: none: %u", s.n);
	tp_ctx_destroy(ctx);
	return exit_status();
}
