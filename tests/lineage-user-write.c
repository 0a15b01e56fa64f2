/* SPDX-License-Identifier: MIT */
/*
 * A user's write and lineage, host backend. What the user writes is never
 * lost to a regeneration, and nothing is regenerated from contents the
 * user overwrote:
 *  - an op's output written by the user stops being regenerable (eviction
 *    is refused), and keeps the user's bytes through an offload;
 *  - a tensor read by records, written by the user: its readers keep the
 *    results of the old contents (regenerated first when evicted), and a
 *    new reader regenerates from the new contents;
 *  - the same through tp_tensor_acquire_range() with TP_WRITE on part of
 *    a tensor;
 *  - a write whose severing cannot regenerate a reader is refused with
 *    nothing changed;
 *  - a write to a tensor lineage never saw costs lineage nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "tests/dev-copy.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "vmm/vmm.h"

#define N	32768		/* floats: two 64K chunks */

static struct tp_ctx *ctx;
static float *want, *got, *mine;
static const size_t bytes = N * sizeof(float);
static const struct tops_scale_params sp = { 1.5f, -0.75f };

static struct tp_tensor *run1(const struct tp_op_type *type, const void *p,
			      size_t plen, struct tp_tensor *in)
{
	return tops_run1(ctx, type, p, plen, in, bytes);
}

static bool same(struct tp_tensor *t, const float *ref)
{
	int ret = tp_tensor_read(ctx, t, 0, got, bytes);

	if (ret)
		diag("read: %s (%s)", tp_strerror(ret), tp_last_error(ctx));
	return !ret && !memcmp(got, ref, bytes);
}

static struct tp_lineage_stats lst(void)
{
	struct tp_lineage_stats st;

	tp_lineage_get_stats(ctx->lineage, &st);
	return st;
}

static void scale_of(const float *in, float *out)
{
	for (size_t i = 0; i < N; i++)
		out[i] = tops_ref_scale(in[i], sp.s, sp.c);
}

int main(void)
{
	float *aold = malloc(bytes), *anew = malloc(bytes);
	struct tp_tensor *a, *x, *y, *z, *w, *b, *c;
	struct tp_lineage_stats before;
	float *p;
	size_t i;
	int rc;

	plan_tests(23);
	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=64M,pager.slab_fraction=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	want = malloc(bytes);
	got = malloc(bytes);
	mine = malloc(bytes);
	for (i = 0; i < N; i++)
		mine[i] = (float)i * 0.5f - 3.0f;

	/* --- an op's output, written by the user ---------------------- */
	a = tops_input(ctx, N, 3);
	ok(a && !tp_tensor_read(ctx, a, 0, aold, bytes), "an input");
	x = run1(&tops_scale, &sp, sizeof(sp), a);
	ok(x && x->computable, "an op's output, regenerable");
	before = lst();
	ok_rc(tp_tensor_write(ctx, x, 0, mine, bytes), "the user writes it");
	ok(!x->computable && lst().user_written == before.user_written + 1,
	   "it is no longer the op's output");
	ok(tp_tensor_evict(ctx, x) == -EPERM && same(x, mine),
	   "eviction is refused: the user's bytes are kept");
	ok(!tp_tensor_offload(ctx, x) && !tp_sync(ctx) && same(x, mine),
	   "offloaded and reloaded, byte for byte the user's");

	/* --- a tensor records read, written by the user ---------------- */
	y = run1(&tops_scale, &sp, sizeof(sp), a);
	z = run1(&tops_softsign, NULL, 0, y);
	ok(y && z && !tp_tensor_evict(ctx, y) && !tp_tensor_evict(ctx, z),
	   "two readers downstream of the input, evicted");
	before = lst();
	for (i = 0; i < N; i++)
		anew[i] = aold[i] * -2.0f + 1.0f;
	ok_rc(tp_tensor_write(ctx, a, 0, anew, bytes), "the user writes the input");
	ok(lst().severed == before.severed + 2 && !y->computable &&
	   !z->computable && !tp_pager_has_evicted(y) &&
	   !tp_pager_has_evicted(z),
	   "both were regenerated from the old contents and severed");
	scale_of(aold, want);
	ok(same(y, want), "the reader holds the old contents' result");
	for (i = 0; i < N; i++)
		want[i] = tops_ref_softsign(want[i]);
	ok(same(z, want), "and so does the reader of the reader");
	ok(same(a, anew), "the input holds the user's bytes");
	w = run1(&tops_scale, &sp, sizeof(sp), a);
	ok(w && w->computable && !tp_tensor_evict(ctx, w),
	   "a new reader is regenerable, and evicted");
	scale_of(anew, want);
	ok(same(w, want), "it regenerates from the new contents");

	/* --- a write through acquire_range, to part of a tensor -------- */
	b = run1(&tops_scale, &sp, sizeof(sp), a);
	c = run1(&tops_softsign, NULL, 0, b);
	ok(b && c && !tp_tensor_evict(ctx, c), "an output and its evicted reader");
	p = tp_tensor_acquire_range(ctx, b, bytes / 2, bytes / 2, TP_WRITE);
	ok(p != NULL && !b->computable && !c->computable &&
	   !tp_pager_has_evicted(c),
	   "acquiring its second half to write: both let go of lineage");
	scale_of(anew, want);
	for (i = 0; i < N; i++)
		want[i] = tops_ref_softsign(want[i]);
	ok(same(c, want), "the reader kept the output's old contents' result");
	/* Written at the address, as an op writes it. */
	rc = p ? dev_store(ctx, p, mine, bytes / 2) : -1;
	if (!rc)
		rc = tp_tensor_release_range(ctx, b, bytes / 2, bytes / 2);
	scale_of(anew, want);
	memcpy(want + N / 2, mine, bytes / 2);
	ok(!rc && same(b, want), "the output: its first half the op's, its second the user's");

	/* --- a refused write: nothing changes ---------------------------- */
	/* Evicted in place: its regeneration maps memory, the driver call
	 * failed below (a moved range would be taken back without one). */
	tp_ctl_set(ctx, "pager.move_evicted", "0");
	y = run1(&tops_scale, &sp, sizeof(sp), a);
	ok(y && !tp_tensor_evict(ctx, y), "a reader of the input, evicted");
	tp_vmm_fail_at(ctx->vmm, 1, EIO);
	rc = tp_tensor_write(ctx, a, 0, mine, bytes);
	tp_vmm_fail_at(ctx->vmm, 0, 0);
	ok(rc == -EIO, "a write whose reader cannot be regenerated fails: %s",
	   tp_strerror(rc));
	ok(same(a, anew) && y->computable && tp_pager_has_evicted(y),
	   "the input and its evicted reader are as they were");
	scale_of(anew, want);
	ok(same(y, want), "and the reader regenerates from them");

	/* --- lineage never saw it ---------------------------------------- */
	b = tp_tensor_create(ctx, bytes, 0);
	before = lst();
	ok(b && !tp_tensor_write(ctx, b, 0, mine, bytes) && same(b, mine) &&
	   lst().severed == before.severed &&
	   lst().user_written == before.user_written && !b->lin.p,
	   "a tensor no op made or read: written with no lineage work");

	tp_ctx_destroy(ctx);
	free(aold);
	free(anew);
	free(want);
	free(got);
	free(mine);
	return exit_status();
}
