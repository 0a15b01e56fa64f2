/* SPDX-License-Identifier: MIT */
/*
 * Recomputable in-place (Coop §3.5), host backend.
 *  - On a computable tensor x: the output takes x's address and pages; the
 *    handle x keeps the old version, moved and EVICTED, regenerable from
 *    its producer. Chains of such ops regenerate.
 *  - On a parameter p (uncomputable): updated at its own address, the
 *    output is p itself. Whatever read the old version is severed: if
 *    evicted it is regenerated from the old version first, then it is
 *    uncomputable (never evicted again).
 *  - A failing launch leaves everything readable with its data.
 *  - A parameter freed while records read it keeps its memory until the
 *    last of them goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define N	32768		/* floats: two 64K chunks */
#define CHAIN	10

static struct tp_ctx *ctx;
static float *pa, *want, *got;
static const size_t bytes = N * sizeof(float);
static const struct tops_scale_params sp = { 1.5f, -0.75f };

static struct tp_tensor *run1(const struct tp_op_type *type, const void *p,
			      size_t plen, struct tp_tensor *in, int *err)
{
	struct tp_tensor *out = NULL;
	int ret = tp_op_run(ctx, type, p, plen, &in, 1, &out, &bytes, 1);

	if (err)
		*err = ret;
	else if (ret)
		diag("tp_op_run(%s): %s", type->name, tp_strerror(ret));
	return ret ? NULL : out;
}

static bool same(struct tp_tensor *t)
{
	int ret = tp_tensor_read(ctx, t, 0, got, bytes);

	if (ret)
		diag("read: %s (%s)", tp_strerror(ret), tp_last_error(ctx));
	return !ret && !memcmp(got, want, bytes);
}

static void want_relu_k(const float *base, unsigned k)
{
	size_t i;
	unsigned j;

	for (i = 0; i < N; i++) {
		want[i] = base[i];
		for (j = 0; j < k; j++)
			want[i] = tops_ref_relu(want[i]);
	}
}

static struct tp_lineage_stats lst(void)
{
	struct tp_lineage_stats st;

	tp_lineage_get_stats(ctx->lineage, &st);
	return st;
}

int main(void)
{
	struct tp_tensor *a, *x, *z, *y[CHAIN + 1], *p, *q, *r, *q2, *r2, *q3, *s, *out;
	float *xs = malloc(bytes), *pold = malloc(bytes), *pnew = malloc(bytes);
	uintptr_t xva, pva;
	struct tp_stats st;
	uint64_t live, sev;
	unsigned k;
	size_t i;
	int err;
	const int eio = EIO;

	plan_tests(38);
	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=64M,pager.slab_fraction=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	pa = malloc(bytes);
	want = malloc(bytes);
	got = malloc(bytes);

	/* --- computable: the output takes the address ----------------- */
	a = tops_input(ctx, N, 3);
	ok(a && !tp_tensor_read(ctx, a, 0, pa, bytes), "input");
	x = run1(&tops_scale, &sp, sizeof(sp), a, NULL);
	z = run1(&tops_softsign, NULL, 0, x, NULL);	/* reads x's old version */
	for (i = 0; i < N; i++)
		xs[i] = tops_ref_scale(pa[i], sp.s, sp.c);
	xva = x->va;
	y[0] = x;
	y[1] = run1(&tops_relu_, NULL, 0, x, NULL);
	ok(y[1] && y[1] != x && y[1]->va == xva && x->va != xva,
	   "the first output took x's address; x moved");
	for (k = 2; y[1] && k <= CHAIN; k++) {
		y[k] = run1(&tops_relu_, NULL, 0, y[k - 1], NULL);
		if (!y[k])
			break;
	}
	ok(k == CHAIN + 1, "a chain of %d in-place ops", CHAIN);
	ok(y[CHAIN]->va == xva, "and so did every later one");
	ok(tp_pager_has_evicted(x) && tp_lineage_can_regenerate(ctx->lineage, x),
	   "x's old version is evicted and regenerable");
	want_relu_k(xs, CHAIN);
	ok(same(y[CHAIN]), "the last output is right");
	memcpy(want, xs, bytes);
	ok(same(x), "x regenerates its old version");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_softsign(xs[i]);
	ok(!tp_tensor_evict(ctx, z) && same(z), "a reader of the old version regenerates from it");
	for (k = 0; k <= CHAIN; k++)
		if (tp_tensor_evict(ctx, y[k]))
			break;
	ok(k == CHAIN + 1, "evict the whole chain");
	want_relu_k(xs, CHAIN);
	ok(same(y[CHAIN]), "the last output regenerates through the chain");
	want_relu_k(xs, CHAIN / 2);
	ok(same(y[CHAIN / 2]), "and a middle one too");

	/* A failing in-place launch: nothing moves, nothing is lost. */
	tp_stats_get(ctx, &st);
	live = st.tensors_live;
	xva = y[CHAIN]->va;
	out = NULL;
	err = tp_op_run(ctx, &tops_fail_, &eio, sizeof(eio), &y[CHAIN], 1, &out,
			&bytes, 1);
	ok(err == -EIO && out == NULL, "failing in-place launch: -EIO, no output");
	tp_stats_get(ctx, &st);
	ok(y[CHAIN]->va == xva && st.tensors_live == live,
	   "its input kept its address, no tensor left over");
	want_relu_k(xs, CHAIN);
	ok(same(y[CHAIN]), "and its contents");
	ok(tp_tensor_acquire(ctx, y[CHAIN], TP_READ) != NULL, "acquire the last output");
	ok(!run1(&tops_relu_, NULL, 0, y[CHAIN], &err) && err == -EBUSY,
	   "in place on an acquired tensor: -EBUSY");
	tp_tensor_release(ctx, y[CHAIN]);

	/* --- a parameter: updated at its own address ------------------ */
	p = tops_input(ctx, N, 11);
	ok(p && !tp_tensor_read(ctx, p, 0, pold, bytes), "a parameter");
	pva = p->va;
	q = run1(&tops_scale, &sp, sizeof(sp), p, NULL);
	r = run1(&tops_softsign, NULL, 0, q, NULL);
	q2 = run1(&tops_scale, &sp, sizeof(sp), p, NULL);
	r2 = run1(&tops_softsign, NULL, 0, q2, NULL);
	ok(q && r && q2 && r2, "four readers of it");
	ok(!tp_tensor_free(ctx, q2) && lst().fake_deleted == 1, "one fake-deleted");
	ok(!tp_tensor_evict(ctx, q) && !tp_tensor_evict(ctx, r) &&
	   !tp_tensor_evict(ctx, r2), "the others evicted");
	sev = lst().severed;
	out = run1(&tops_relu_, NULL, 0, p, NULL);
	ok(out == p && p->va == pva, "the output is the parameter, at its address");
	for (i = 0; i < N; i++)
		pnew[i] = tops_ref_relu(pold[i]);
	memcpy(want, pnew, bytes);
	ok(same(p), "with its new contents");
	ok(lst().severed == sev + 3 && lst().fake_deleted == 0,
	   "its three live readers severed, the fake-deleted one gone");
	ok(!q->computable && !r->computable && !r2->computable &&
	   !tp_pager_has_evicted(r) && !tp_pager_has_evicted(r2),
	   "they are resident and uncomputable");
	ok(tp_tensor_evict(ctx, r) == -EPERM, "and can no longer be evicted");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_scale(pold[i], sp.s, sp.c);
	ok(same(q), "a reader holds the old version's result");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_softsign(tops_ref_scale(pold[i], sp.s, sp.c));
	ok(same(r) && same(r2), "and so do the readers of readers");
	s = run1(&tops_scale, &sp, sizeof(sp), p, NULL);
	ok(s && s->computable && !tp_tensor_evict(ctx, s), "a new reader is computable");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_scale(pnew[i], sp.s, sp.c);
	ok(same(s), "and regenerates from the new version");
	err = tp_op_run(ctx, &tops_fail_, &eio, sizeof(eio), &p, 1, &out,
			&bytes, 1);
	memcpy(want, pnew, bytes);
	ok(err == -EIO && p->va == pva && same(p),
	   "a failing in-place launch on it: -EIO, contents kept");
	ok(!s->computable && !tp_pager_has_evicted(s),
	   "its reader was severed before the launch, and kept");

	/* --- freeing a parameter that evicted tensors still need ----- */
	q3 = run1(&tops_scale, &sp, sizeof(sp), p, NULL);
	ok(q3 && !tp_tensor_evict(ctx, q3), "a reader of p, evicted");
	ok_rc(tp_tensor_free(ctx, p), "free p");
	ok(lst().kept == 1, "p's memory is kept for the record that reads it");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_scale(pnew[i], sp.s, sp.c);
	ok(q3->computable && same(q3) && !tp_tensor_evict(ctx, q3) && same(q3),
	   "the reader still regenerates from it");
	ok(!tp_tensor_free(ctx, q3) && lst().kept == 0, "and p goes with the reader");

	/* --- everything goes ------------------------------------------ */
	for (k = 0; k <= CHAIN; k++)
		tp_tensor_free(ctx, y[k]);
	tp_tensor_free(ctx, z);
	tp_tensor_free(ctx, q);
	tp_tensor_free(ctx, r);
	tp_tensor_free(ctx, r2);
	tp_tensor_free(ctx, s);
	ok(lst().records == 0 && lst().fake_deleted == 0, "no record left (%llu)",
	   (unsigned long long)lst().records);
	tp_tensor_free(ctx, a);
	tp_stats_get(ctx, &st);
	ok(st.tensors_live == 0, "no tensor left (%llu)",
	   (unsigned long long)st.tensors_live);
	tp_ctx_destroy(ctx);
	free(pa);
	free(want);
	free(got);
	free(xs);
	free(pold);
	free(pnew);
	return exit_status();
}
