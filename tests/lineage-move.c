/* SPDX-License-Identifier: MIT */
/*
 * pager.move_evicted, host backend with data. Op costs come from the model
 * so that the victims are the same in every build.
 *  - A computable tensor evicted whole leaves its range mapped in the
 *    range cache; the next tensor of its size takes it, address and
 *    memory, with no driver call, and the victim comes back (regenerated,
 *    byte for byte) at another address.
 *  - A regeneration, too, takes the range a victim of its size left.
 *  - Used again before anyone took its range, a moved tensor gets it back
 *    with its bytes: no recompute, the same address.
 *  - A tensor whose address the user took (tp_tensor_acquire) never
 *    moves: evicted, it regenerates where it was.
 *  - Freed while moved, its range is free memory for the next tensor.
 *  - Off, every eviction unmaps and every tensor maps its own range.
 *  - A loop of same-sized tensors under a budget gives the same bytes on
 *    and off, on with fewer driver calls.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	65536
#define N	(4 * CHUNK / sizeof(float))	/* four chunks */

static const size_t bytes = N * sizeof(float);
static const struct tops_scale_params sp = { 1.5f, -0.75f };

/* @chunks of 64K; only eviction frees memory, whole tensors, stalest
 * first. */
static struct tp_ctx *open_ctx(bool move, unsigned chunks)
{
	char opts[512];
	struct tp_ctx *ctx;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=host,vmm.chunk_size=64K,pager.budget=%uK,"
		 "pager.slab_fraction=0,pager.high_watermark=100,"
		 "policy.filter=lru,policy.director=evict,"
		 "policy.partial_evict=off,policy.prefetch=0,"
		 "policy.costs=model,pager.move_evicted=%d", chunks * 64, move);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	return ctx;
}

static struct tp_stats stats(struct tp_ctx *ctx)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	return st;
}

static struct tp_tensor *run1(struct tp_ctx *ctx, const struct tp_op_type *type,
			      const void *p, size_t plen, struct tp_tensor *in)
{
	struct tp_tensor *t = tops_run1(ctx, type, p, plen, in, bytes);

	if (!t)
		bail_out("op: %s", tp_last_error(ctx));
	return t;
}

/* The references of scale(a) and softsign(a). */
static void refs(struct tp_ctx *ctx, struct tp_tensor *a, float *x, float *y)
{
	float *pa = tops_contents(ctx, a);

	for (size_t i = 0; i < N; i++) {
		x[i] = tops_ref_scale(pa[i], sp.s, sp.c);
		y[i] = tops_ref_softsign(pa[i]);
	}
	free(pa);
}

static void moved(float *ref_x, float *ref_y, float *ref_z)
{
	struct tp_ctx *ctx = open_ctx(true, 14);
	struct tp_tensor *a, *x, *y, *z, *w;
	unsigned long replays;
	struct tp_stats s0, s1;
	uintptr_t x_at, y_at;

	a = tops_input(ctx, N, 7);
	if (!a)
		bail_out("input");
	refs(ctx, a, ref_x, ref_y);
	for (size_t i = 0; i < N; i++)
		ref_z[i] = tops_ref_scale(ref_y[i], sp.s, sp.c);
	x = run1(ctx, &tops_scale, &sp, sizeof(sp), a);
	y = run1(ctx, &tops_softsign, NULL, 0, a);
	x_at = x->va;
	y_at = y->va;

	/* a, x, y hold 12 of 14 chunks: z's 4 come from x, the stalest. */
	s0 = stats(ctx);
	z = run1(ctx, &tops_scale, &sp, sizeof(sp), y);
	s1 = stats(ctx);
	ok(s1.ranges_moved - s0.ranges_moved == 1 &&
	   s1.ranges_adopted - s0.ranges_adopted == 1 &&
	   x->evicted_pages == 4,
	   "x evicted whole, its range moved and taken (%" PRIu64 " moved, %" PRIu64 " taken)",
	   s1.ranges_moved - s0.ranges_moved,
	   s1.ranges_adopted - s0.ranges_adopted);
	ok(z->va == x_at, "z is at x's old address");
	ok(s1.driver_calls == s0.driver_calls,
	   "no driver call for the eviction nor for z's memory (%" PRIu64 ")",
	   s1.driver_calls - s0.driver_calls);
	ok(tp_tensor_lookup(ctx, (void *)x_at) == z,
	   "the address finds z, not x");

	/* x comes back by its op: y, the stalest, makes room by its range. */
	replays = tops_replays;
	ok(tops_same(ctx, x, ref_x) && tops_replays > replays,
	   "x regenerates byte for byte");
	ok(y->evicted_pages == 4 && x->va == y_at && !y->own_range &&
	   tp_tensor_lookup(ctx, (void *)y_at) == x,
	   "in y's range, which y left: the address finds x");

	/* Evicted with room to spare, z keeps its bytes in its range. */
	ok(!tp_tensor_evict(ctx, z) && z->own_range,
	   "z evicted, its range cached with its bytes");
	replays = tops_replays;
	s0 = stats(ctx);
	ok(tops_same(ctx, z, ref_z) && tops_replays == replays,
	   "z back with no recompute, byte for byte");
	s1 = stats(ctx);
	ok(z->va == x_at && s1.rescued_pages - s0.rescued_pages == 4,
	   "at its own address, its 4 pages rescued");
	ok(tops_same(ctx, y, ref_y), "y regenerates byte for byte");

	/* The user's address stays the tensor's. */
	w = run1(ctx, &tops_softsign, NULL, 0, x);
	{
		void *p = tp_tensor_acquire(ctx, w, TP_READ);
		uintptr_t w_at = (uintptr_t)p;
		struct tp_tensor *f[3];

		ok(p && !tp_tensor_release(ctx, w), "w acquired by the user");
		s0 = stats(ctx);
		/* Three more tensors of w's size: w, the stalest, leaves. */
		for (int i = 0; i < 3; i++)
			f[i] = run1(ctx, &tops_scale, &sp, sizeof(sp), a);
		s1 = stats(ctx);
		ok(w->evicted_pages == 4, "w evicted");
		ok(w->va == w_at && !w->own_range,
		   "w kept its range: the user holds its address");
		p = tp_tensor_acquire(ctx, w, TP_READ);
		ok((uintptr_t)p == w_at && !tp_tensor_release(ctx, w),
		   "w comes back where the user saw it");
		for (int i = 0; i < 3; i++)
			tp_tensor_free(ctx, f[i]);
	}

	/* Freed while moved: the range is free memory, owned by no one. */
	{
		struct tp_tensor *g, *h;
		uintptr_t g_at;

		g = run1(ctx, &tops_scale, &sp, sizeof(sp), a);
		g_at = g->va;
		ok(!tp_tensor_evict(ctx, g) && g->own_range,
		   "g evicted by the user, moved");
		ok(!tp_tensor_free(ctx, g), "g freed while moved");
		h = run1(ctx, &tops_softsign, NULL, 0, a);
		ok(h->va == g_at && tops_same(ctx, h, ref_y),
		   "the next tensor of its size takes its range, right");
		tp_tensor_free(ctx, h);
	}
	ok(tops_same(ctx, x, ref_x) && tops_same(ctx, y, ref_y) &&
	   tops_same(ctx, z, ref_z),
	   "x, y and z read back right at the end");
	tp_tensor_free(ctx, w);
	tp_tensor_free(ctx, z);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, a);
	tp_ctx_destroy(ctx);
}

static void not_moved(const float *ref_x)
{
	struct tp_ctx *ctx = open_ctx(false, 14);
	struct tp_tensor *a, *x, *y, *z;
	struct tp_stats st;
	uintptr_t x_at;

	a = tops_input(ctx, N, 7);
	x = run1(ctx, &tops_scale, &sp, sizeof(sp), a);
	y = run1(ctx, &tops_softsign, NULL, 0, a);
	x_at = x->va;
	z = run1(ctx, &tops_scale, &sp, sizeof(sp), y);
	st = stats(ctx);
	ok(x->evicted_pages == 4 && st.ranges_moved == 0 &&
	   st.ranges_adopted == 0 && z->va != x_at,
	   "off: x evicted where it is, z in a range of its own");
	ok(tops_same(ctx, x, ref_x) && x->va == x_at,
	   "x regenerates at its address");
	tp_tensor_free(ctx, z);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, a);
	tp_ctx_destroy(ctx);
}

/*
 * Steps of a chain of six same-sized tensors from one input, read again
 * at the end of the step as a backward pass would; 18 chunks hold four.
 * Return the final bytes; *@calls: driver calls after the first step.
 */
static float *loop(bool move, uint64_t *calls, uint64_t *adopted)
{
	struct tp_ctx *ctx = open_ctx(move, 18);
	struct tp_tensor *a = tops_input(ctx, N, 11), *t[6], *out = NULL;
	struct tp_stats s0, s1;
	float *res;

	for (int step = 0; step < 4; step++) {
		if (step == 1)
			s0 = stats(ctx);
		t[0] = run1(ctx, &tops_scale, &sp, sizeof(sp), a);
		for (int i = 1; i < 6; i++)
			t[i] = i & 1 ? run1(ctx, &tops_softsign, NULL, 0, t[i - 1]) :
				       run1(ctx, &tops_scale, &sp, sizeof(sp),
					    t[i - 1]);
		/* The "backward": reads the early ones again. */
		if (out)
			tp_tensor_free(ctx, out);
		{
			struct tp_tensor *in[2] = { t[5], t[0] };

			if (tp_op_run(ctx, &tops_add, NULL, 0, in, 2, &out,
				      &bytes, 1))
				bail_out("add: %s", tp_last_error(ctx));
		}
		for (int i = 0; i < 6; i++)
			tp_tensor_free(ctx, t[i]);
	}
	s1 = stats(ctx);
	*calls = s1.driver_calls - s0.driver_calls;
	*adopted = s1.ranges_adopted;
	res = tops_contents(ctx, out);
	tp_tensor_free(ctx, out);
	tp_tensor_free(ctx, a);
	tp_ctx_destroy(ctx);
	return res;
}

int main(void)
{
	float *ref_x = malloc(bytes), *ref_y = malloc(bytes);
	float *ref_z = malloc(bytes), *on, *off;
	uint64_t calls_on, calls_off, adopted_on, adopted_off;

	plan_tests(23);
	moved(ref_x, ref_y, ref_z);
	not_moved(ref_x);

	on = loop(true, &calls_on, &adopted_on);
	off = loop(false, &calls_off, &adopted_off);
	ok(!memcmp(on, off, bytes), "the loop's result is the same on and off");
	ok(adopted_on > 0 && adopted_off == 0,
	   "on, tensors took moved ranges (%" PRIu64 ")", adopted_on);
	ok(calls_on < calls_off,
	   "on, fewer driver calls in 3 steps: %" PRIu64 " against %" PRIu64,
	   calls_on, calls_off);
	free(on);
	free(off);
	free(ref_x);
	free(ref_y);
	free(ref_z);
	return exit_status();
}
