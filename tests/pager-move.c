/* SPDX-License-Identifier: MIT */
/*
 * pager.move_evicted on the backend under test (TPAGER_TEST_BACKEND; the
 * cuda backend on the stand-in driver in tests/vmm-cuda-fake.sh), with
 * scratch tensors, which evict without lineage, and the bytes read and
 * written through tp_tensor_read/write (no address given to the user):
 *  - evicted whole, a tensor leaves its range mapped; a new tensor of its
 *    size takes it with no driver call, at its address, and holds the
 *    bytes written to it;
 *  - the moved tensor written again gets memory elsewhere, and its bytes;
 *  - used again before its range was taken, a moved tensor gets it back
 *    with its bytes (a rescue), with no driver call;
 *  - a tensor made before such a range was there takes it at its first
 *    write, its own range released;
 *  - a tensor whose address tp_tensor_acquire gave never moves;
 *  - freed while moved, its range serves the next tensor; the context
 *    goes down with ranges still cached.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/pager-util.h"

#define PAGES	4

static struct tp_ctx *ctx;
static size_t bytes;
static unsigned char *buf, *got;

static struct tp_stats stats(void)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	return st;
}

/* A scratch tensor of PAGES chunks holding the bytes of @seed. */
static struct tp_tensor *written(uint64_t seed)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, TP_SCRATCH);

	pt_fill(buf, bytes, seed);
	if (!t || tp_tensor_write(ctx, t, 0, buf, bytes))
		bail_out("a written tensor: %s", tp_last_error(ctx));
	return t;
}

/* Whether @t reads back the bytes of @seed. */
static bool holds(struct tp_tensor *t, uint64_t seed)
{
	pt_fill(buf, bytes, seed);
	return !tp_tensor_read(ctx, t, 0, got, bytes) &&
	       !memcmp(buf, got, bytes);
}

int main(void)
{
	struct tp_tensor *a, *b, *c, *u, *g, *h;
	uintptr_t a_at, c_at, g_at;
	struct tp_stats s0, s1;
	void *p;

	pt_probe();
	plan_tests(16);
	/* Rescues on, as by default; no watermark releases. */
	ctx = pt_ctx("pager.budget=%uC,pager.rescue=1,pager.slab_fraction=0,"
		     "pager.high_watermark=100", 3 * PAGES);
	bytes = PAGES * pt_chunk(ctx);
	buf = malloc(bytes);
	got = malloc(bytes);

	a = written(1);
	a_at = a->va;
	ok(!tp_tensor_evict(ctx, a) && a->own_range && a->unreserved,
	   "a evicted whole: its range, mapped, went to the cache");
	s0 = stats();
	b = written(2);
	s1 = stats();
	/* Made with a cached range of its size there: its creation takes it. */
	ok(b->va == a_at && s1.range_cache_hits - s0.range_cache_hits == 1,
	   "b, of its size, took it: at a's old address");
	ok(s1.driver_calls == s0.driver_calls,
	   "with no driver call (%" PRIu64 ")",
	   s1.driver_calls - s0.driver_calls);
	ok(holds(b, 2), "b holds its bytes");
	ok(!a->own_range && tp_tensor_lookup(ctx, (void *)a_at) == b,
	   "a's bytes are gone with the range; the address finds b");
	pt_fill(buf, bytes, 3);
	ok(!tp_tensor_write(ctx, a, 0, buf, bytes) && holds(a, 3) &&
	   a->va != a_at && holds(b, 2),
	   "a written again: a range of its own, both right");

	/* Left with room to spare: its range waits for it. */
	c = written(4);
	c_at = c->va;
	ok(!tp_tensor_evict(ctx, c) && c->own_range, "c evicted, moved");
	s0 = stats();
	ok(holds(c, 4) && c->va == c_at, "c back, its bytes at its address");
	s1 = stats();
	ok(s1.rescued_pages - s0.rescued_pages == PAGES &&
	   s1.driver_calls == s0.driver_calls,
	   "rescued whole, with no driver call (%" PRIu64 ")",
	   s1.driver_calls - s0.driver_calls);

	/* Made before the range was there: its first write takes it. */
	{
		struct tp_tensor *x = tp_tensor_create(ctx, bytes, TP_SCRATCH);

		ok(x && !tp_tensor_evict(ctx, c) && c->own_range,
		   "x made, then c moved again");
		s0 = stats();
		pt_fill(buf, bytes, 8);
		ok(!tp_tensor_write(ctx, x, 0, buf, bytes) && x->va == c_at &&
		   stats().ranges_adopted - s0.ranges_adopted == 1 &&
		   holds(x, 8) && !c->own_range,
		   "x's first write takes c's range, its own released");
		tp_tensor_free(ctx, x);
	}

	/* An address the user holds stays. */
	tp_tensor_free(ctx, c);
	u = written(5);
	p = tp_tensor_acquire(ctx, u, TP_READ);
	ok(p && !tp_tensor_release(ctx, u) && !tp_tensor_evict(ctx, u) &&
	   !u->own_range && !u->unreserved,
	   "u, whose address the user took, evicted where it is");
	ok(tp_tensor_acquire(ctx, u, TP_WRITE) == p &&
	   !tp_tensor_release(ctx, u), "and comes back there");

	/* Freed while moved. */
	g = written(6);
	g_at = g->va;
	ok(!tp_tensor_evict(ctx, g) && g->own_range && !tp_tensor_free(ctx, g),
	   "g evicted, moved, freed");
	h = written(7);
	ok(h->va == g_at && holds(h, 7),
	   "the next tensor of its size takes its range, right");
	/* A moved tensor, its range still cached, as the context goes. */
	ok(!tp_tensor_evict(ctx, h) && h->own_range, "h moved at the end");
	tp_ctx_destroy(ctx);
	free(buf);
	free(got);
	return exit_status();
}
