/* SPDX-License-Identifier: MIT */
/*
 * A free that would make an evicted tensor dearer regenerates it first
 * (MegEngine's real deletion, lineage/settle.c), under the delta-overlap
 * director; the baselines keep fake deletion as their papers do.
 *
 * A backward pass in miniature: a chain c1 .. cK, each freed once the
 * next is made (fake deleted: its memory goes, its record stays), then p
 * made from cK, and q from p. q is evicted while p is resident, priced
 * at its own op. Then the program frees p. Fake deletion alone leaves q
 * to come back through p and the whole freed chain: K + 2 replays at its
 * next read. Settled, q is replayed once, at the free, and read for
 * nothing more.
 *
 * A free that adds little (p made straight from the input, q's price
 * going from one op to two) is left alone: q comes back at its read.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"

#define CHUNK	(64u << 10)
#define K	16

static struct tp_tensor *run(struct tp_ctx *ctx, struct tp_tensor *a)
{
	return tops_nop_run(ctx, a, NULL, CHUNK);
}

static void put(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (tp_tensor_free(ctx, t))
		bail_out("tp_tensor_free");
}

static uint64_t recomputes(struct tp_ctx *ctx)
{
	struct tp_stats s;

	if (tp_stats_get(ctx, &s))
		bail_out("tp_stats_get");
	return s.recomputes;
}

/*
 * Replays at p's free and at q's read, for a chain of @chain ops before
 * p under @policy ("filter/director").
 */
static void scenario(const char *filter, const char *director,
		     unsigned chain, uint64_t *at_free, uint64_t *at_read)
{
	struct tp_tensor *x0, *c, *p, *q;
	struct tp_ctx *ctx;
	char opts[512];
	uint64_t r0, r1, r2;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=64K,pager.budget=64M,"
		 "pager.rescue=0,policy.filter=%s,policy.director=%s",
		 filter, director);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x0 = tops_written(ctx, CHUNK);
	c = x0;
	for (unsigned i = 0; i < chain; i++) {
		struct tp_tensor *n = run(ctx, c);

		if (c != x0)
			put(ctx, c);
		c = n;
	}
	p = run(ctx, c);
	if (c != x0)
		put(ctx, c);
	q = run(ctx, p);
	if (tp_tensor_evict(ctx, q))
		bail_out("tp_tensor_evict");
	r0 = recomputes(ctx);
	put(ctx, p);
	r1 = recomputes(ctx);
	if (!tp_tensor_acquire(ctx, q, TP_READ))
		bail_out("acquire q: %s", tp_last_error(ctx));
	tp_tensor_release(ctx, q);
	r2 = recomputes(ctx);
	*at_free = r1 - r0;
	*at_read = r2 - r1;
	put(ctx, q);
	put(ctx, x0);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	uint64_t f, r;

	plan_tests(3);

	scenario("overlap", "delta-overlap", K, &f, &r);
	ok(f == 1 && r == 0,
	   "delta-overlap: q regenerated at p's free (%llu replays), read for %llu",
	   (unsigned long long)f, (unsigned long long)r);

	scenario("dtr", "evict", K, &f, &r);
	ok(f == 0 && r == K + 2,
	   "dtr/evict: fake deletion, q read through the freed chain (%llu replays, K + 2 = %u)",
	   (unsigned long long)r, K + 2);

	scenario("overlap", "delta-overlap", 0, &f, &r);
	ok(f == 0 && r == 2,
	   "delta-overlap: a free that adds one op is left alone (%llu at the free, %llu at the read)",
	   (unsigned long long)f, (unsigned long long)r);

	return exit_status();
}
