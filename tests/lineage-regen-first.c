/* SPDX-License-Identifier: MIT */
/*
 * An op whose evicted input finds no room to be regenerated while the
 * inputs before it are held tries again with that one first, nothing
 * held: a regeneration holds what it replays, and a resident input loses
 * nothing by waiting (it may leave by offload meanwhile, and comes back).
 * On the host backend, 5 chunks of 4 KiB, the contents checked:
 *
 *  - b = reduce(x): x 4 chunks, b 1; b evicted, x offloaded; a, 1 chunk,
 *    written: add(a, b) holds a, then regenerating b needs x and b, 5
 *    chunks beside a's one: no room. Input b first, with nothing held,
 *    fits (a goes to host swap meanwhile), and the op runs: b is what it
 *    was, the sum a + b bit for bit;
 *  - the same op whose inputs are both resident takes them in order, as
 *    before (no regeneration, nothing sent away).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	4096
#define FLOATS	(CHUNK / 4)

static struct tp_ctx *ctx;
static float av[FLOATS], bv[FLOATS], ov[FLOATS];

static struct tp_tensor *add(struct tp_tensor *a, struct tp_tensor *b,
			     int *ret)
{
	struct tp_tensor *in[2] = { a, b }, *out = NULL;
	size_t bytes = CHUNK;

	*ret = tp_op_run(ctx, &tops_add, NULL, 0, in, 2, &out, &bytes, 1);
	return *ret ? NULL : out;
}

/* Whether @o holds a + b as read before, bit for bit. */
static bool is_sum(struct tp_tensor *o)
{
	if (tp_tensor_read(ctx, o, 0, ov, sizeof(ov)))
		return false;
	for (size_t i = 0; i < FLOATS; i++) {
		float want = av[i] + bv[i];

		if (memcmp(&want, &ov[i], sizeof(want)))
			return false;
	}
	return true;
}

int main(void)
{
	struct tp_tensor *x, *a, *b, *o;
	struct tp_stats st0, st;
	float now[FLOATS];
	int ret;

	plan_tests(6);
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=20K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.rescue=0,"
			    "pager.high_watermark=100");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x = tops_input(ctx, 4 * FLOATS, 1);
	b = x ? tops_run1(ctx, &tops_reduce, NULL, 0, x, CHUNK) : NULL;
	if (!b || tp_tensor_read(ctx, b, 0, bv, sizeof(bv)))
		bail_out("x, b: %s", tp_last_error(ctx));
	ret = tp_tensor_evict(ctx, b);
	ret = ret ?: tp_tensor_offload(ctx, x);
	a = ret ? NULL : tops_input(ctx, FLOATS, 2);
	if (!a || tp_tensor_read(ctx, a, 0, av, sizeof(av)))
		bail_out("a: %d %s", ret, tp_last_error(ctx));

	tp_stats_get(ctx, &st0);
	o = add(a, b, &ret);
	tp_stats_get(ctx, &st);
	ok(!ret, "add(a, b) with b to regenerate beside a: runs (%s)",
	   ret ? tp_strerror(ret) : "0");
	ok(st.recomputes == st0.recomputes + 1,
	   "b regenerated once (%llu recomputes)",
	   (unsigned long long)(st.recomputes - st0.recomputes));
	ok(o && is_sum(o), "the output is a + b, bit for bit");
	ok(!tp_tensor_read(ctx, b, 0, now, sizeof(now)) &&
	   !memcmp(now, bv, sizeof(now)),
	   "b holds what reduce(x) gave it");
	if (o)
		tp_tensor_free(ctx, o);

	/* Both resident: no regeneration, nothing sent away. */
	tp_stats_get(ctx, &st0);
	o = add(a, b, &ret);
	tp_stats_get(ctx, &st);
	ok(!ret && o && is_sum(o), "both resident: the same sum (%s)",
	   ret ? tp_strerror(ret) : "0");
	ok(st.recomputes == st0.recomputes && st.evictions == st0.evictions,
	   "both resident: nothing regenerated, nothing evicted");
	if (o)
		tp_tensor_free(ctx, o);
	tp_tensor_free(ctx, a);
	tp_tensor_free(ctx, b);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
	return exit_status();
}
