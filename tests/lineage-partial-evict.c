/* SPDX-License-Identifier: MIT */
/*
 * Partial eviction (policy.partial_evict), host backend with data. Op
 * costs come from the model (1 us each), not from timing the host, so
 * that the victims are the same in every build.
 *  - A victim larger than what a request lacks gives only the pages
 *    lacking; the rest stay resident.
 *  - Reading any part of a partly evicted tensor regenerates it whole,
 *    byte for byte what its op made; the replay makes room for itself
 *    from other tensors.
 *  - Its regeneration is owed already: the policy takes the rest of it
 *    before it starts on another tensor.
 *  - Off, the same request evicts the victim whole; auto turns it on only
 *    for delta-overlap with a filter that ranks by cost.
 *  - With pager.move_evicted (off above), a victim of the requesting
 *    tensor's size leaves whole all the same: the request takes its
 *    range, and what it would have kept regenerates with the rest.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "policy/policy_priv.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	65536
#define N	(4 * CHUNK / sizeof(float))	/* four chunks */

static struct tp_ctx *ctx;
static const size_t bytes = N * sizeof(float);
static const struct tops_scale_params sp = { 1.5f, -0.75f };
static float *ref_x, *ref_z, *got;

static struct tp_tensor *run1(const struct tp_op_type *type, const void *p,
			      size_t plen, struct tp_tensor *in)
{
	return tops_run1(ctx, type, p, plen, in, bytes);
}

static bool same(struct tp_tensor *t, size_t off, size_t len,
		 const float *ref)
{
	int ret = tp_tensor_read(ctx, t, off, got, len);

	if (ret)
		diag("read: %s (%s)", tp_strerror(ret), tp_last_error(ctx));
	return !ret && !memcmp(got, (const char *)ref + off, len);
}

static struct tp_stats stats(void)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	return st;
}

/* A user tensor of @n chunks, written: room for it comes from victims. */
static struct tp_tensor *fill(size_t n)
{
	struct tp_tensor *t = tp_tensor_create(ctx, n * CHUNK, 0);
	char *buf = calloc(n, CHUNK);

	if (t && buf && tp_tensor_write(ctx, t, 0, buf, n * CHUNK)) {
		tp_tensor_free(ctx, t);
		t = NULL;
	}
	free(buf);
	return t;
}

static bool partial(const char *director, const char *filter)
{
	return !tp_ctl_set(ctx, "policy.director", director) &&
	       !tp_ctl_set(ctx, "policy.filter", filter) &&
	       tp_policy_partial_evict(ctx->policy);
}

int main(void)
{
	struct tp_tensor *a, *x, *z, *b, *c;
	float *pa = malloc(bytes);
	struct tp_stats st;
	size_t i;

	plan_tests(19);
	ref_x = malloc(bytes);
	ref_z = malloc(bytes);
	got = malloc(bytes);
	/* 14 chunks: a, x and z take 12. Only eviction frees memory. */
	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=896K,"
			    "pager.slab_fraction=0,pager.high_watermark=100,"
			    "policy.filter=dtr,policy.director=evict,"
			    "policy.partial_evict=on,policy.prefetch=0,"
			    "policy.costs=model,pager.move_evicted=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));

	a = tops_input(ctx, N, 5);
	if (!a || tp_tensor_read(ctx, a, 0, pa, bytes))
		bail_out("input");
	x = run1(&tops_scale, &sp, sizeof(sp), a);
	z = run1(&tops_softsign, NULL, 0, a);
	if (!x || !z)
		bail_out("ops");
	for (i = 0; i < N; i++) {
		ref_x[i] = tops_ref_scale(pa[i], sp.s, sp.c);
		ref_z[i] = tops_ref_softsign(pa[i]);
	}

	/* 4 chunks wanted, 2 free: the stalest computable tensor gives 2. */
	b = fill(4);
	st = stats();
	ok(b && x->evicted_pages == 2 && x->resident_pages == 2 &&
	   z->resident_pages == 4,
	   "a request lacking 2 chunks takes 2 of x's 4 (x: %zu resident, %zu evicted)",
	   x->resident_pages, x->evicted_pages);
	ok(st.evictions == 1 && st.partial_evictions == 1,
	   "one eviction, counted partial");
	ok(tp_policy_regen_cost(ctx->policy, x, &(size_t){ 0 }) == 0,
	   "its regeneration is owed: the policy counts its c_r as 0");

	/* Its first chunk is resident; reading it regenerates x whole. */
	ok(same(x, 0, CHUNK, ref_x) && x->evicted_pages == 0 &&
	   x->resident_pages == 4,
	   "reading a resident part regenerates it whole");
	ok(same(x, 0, bytes, ref_x), "byte for byte what its op made");
	ok(z->evicted_pages == 2 && z->resident_pages == 2,
	   "the replay's room came from z, 2 of its pages");
	ok(same(z, bytes - CHUNK, CHUNK, ref_z) && z->evicted_pages == 0,
	   "z, read at its end (evicted), comes back whole");
	ok(same(z, 0, bytes, ref_z), "and right");

	/* The rest of a partly evicted tensor goes before anything else. */
	ok(x->evicted_pages == 2, "x gave z its room");
	c = fill(2);
	ok(c && x->evicted_pages == 4 && z->evicted_pages == 0,
	   "2 more chunks: x's last 2 pages go, z keeps all of its");
	ok(same(x, 0, bytes, ref_x), "x regenerates right");

	/* Off: whole tensors. */
	ok(!tp_ctl_set(ctx, "policy.partial_evict", "off") &&
	   !tp_tensor_free(ctx, c) && !tp_tensor_free(ctx, b) &&
	   same(z, 0, bytes, ref_z) && !x->evicted_pages && !z->evicted_pages,
	   "partial eviction off; the fillers freed, x and z resident");
	st = stats();
	b = fill(4);
	ok(b && ((x->evicted_pages == 4 && !z->evicted_pages) ||
		 (z->evicted_pages == 4 && !x->evicted_pages)) &&
	   stats().partial_evictions == st.partial_evictions,
	   "off, a request lacking 2 chunks evicts one victim whole (x %zu, z %zu evicted; %llu partial)",
	   x->evicted_pages, z->evicted_pages,
	   (unsigned long long)stats().partial_evictions);
	ok(same(x, 0, bytes, ref_x) && same(z, 0, bytes, ref_z),
	   "both still regenerate right");

	/* auto: delta-overlap with a filter that ranks by cost. */
	ok(!tp_ctl_set(ctx, "policy.partial_evict", "auto") &&
	   partial("delta-overlap", "overlap") && partial("delta-overlap", "dtr") &&
	   partial("delta-overlap", "msps"),
	   "auto: on with delta-overlap and overlap, dtr or msps");
	ok(!partial("delta-overlap", "delta") && !partial("delta-overlap", "lru") &&
	   !partial("delta", "dtr") && !partial("evict", "overlap"),
	   "auto: off with a cost-blind filter or another director");

	/* Moves on, partial eviction on: b's size is x's and z's. */
	ok(!tp_ctl_set(ctx, "policy.partial_evict", "on") &&
	   !tp_ctl_set(ctx, "policy.filter", "dtr") &&
	   !tp_ctl_set(ctx, "policy.director", "evict") &&
	   !tp_ctl_set(ctx, "pager.move_evicted", "1") &&
	   !tp_tensor_free(ctx, b) && same(x, 0, bytes, ref_x) &&
	   same(z, 0, bytes, ref_z) && !x->evicted_pages && !z->evicted_pages,
	   "moves on; x and z resident");
	st = stats();
	b = fill(4);
	ok(b && (x->evicted_pages == 4 || z->evicted_pages == 4) &&
	   stats().partial_evictions == st.partial_evictions &&
	   stats().ranges_adopted == st.ranges_adopted + 1,
	   "a request of a victim's size takes it whole, and its range (%llu partial, %llu taken)",
	   (unsigned long long)(stats().partial_evictions - st.partial_evictions),
	   (unsigned long long)(stats().ranges_adopted - st.ranges_adopted));
	ok(same(x, 0, bytes, ref_x) && same(z, 0, bytes, ref_z),
	   "both regenerate right");

	tp_ctx_destroy(ctx);
	free(pa);
	free(ref_x);
	free(ref_z);
	free(got);
	return exit_status();
}
