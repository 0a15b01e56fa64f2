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
 *    before (no regeneration, nothing sent away);
 *  - in parts (tp_lin_run_split(), as tp_op_run() runs an op that does
 *    not fit whole): part 0 of addrows(c, d) holds c whole (2 chunks),
 *    then regenerating d = reduce(y) needs y (5) and d (2) beside it: no
 *    room. d first, nothing held, fits; the rows are c + d, bit for bit.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage_int.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	4096
#define FLOATS	(CHUNK / 4)

static struct tp_ctx *ctx;
static float av[FLOATS], bv[FLOATS], ov[FLOATS];

/* A host context of @budget, 4 KiB chunks, nothing kept for later. */
static struct tp_ctx *host_ctx(const char *budget)
{
	char conf[256];
	struct tp_ctx *c;

	snprintf(conf, sizeof(conf), "vmm.backend=host,vmm.chunk_size=4K,"
		 "pager.budget=%s,pager.slab_fraction=0,pager.range_cache=0,"
		 "pager.rescue=0,pager.high_watermark=100", budget);
	c = tp_ctx_create(conf);
	if (!c)
		bail_out("tp_ctx_create: %s", strerror(errno));
	return c;
}

/*
 * reduce(x) into @bytes, x of @x_chunks written from @seed: its contents
 * read into @val, then it evicted and x offloaded; *@x is x.
 */
static struct tp_tensor *to_regenerate(size_t x_chunks, size_t bytes,
				       uint64_t seed, float *val,
				       struct tp_tensor **x)
{
	struct tp_tensor *r;

	*x = tops_input(ctx, x_chunks * FLOATS, seed);
	r = *x ? tops_run1(ctx, &tops_reduce, NULL, 0, *x, bytes) : NULL;
	if (!r || tp_tensor_read(ctx, r, 0, val, bytes) ||
	    tp_tensor_evict(ctx, r) || tp_tensor_offload(ctx, *x))
		bail_out("a tensor to regenerate: %s", tp_last_error(ctx));
	return r;
}

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

/*
 * addrows(c, d) in two parts under 8 chunks (tp_lin_run_split, as
 * tp_op_run calls it for an op that does not fit whole), d = reduce(y)
 * to regenerate: y 5 chunks, c, d and the output 2.
 */
static void in_parts(void)
{
	static float cv[2 * FLOATS], dv[2 * FLOATS], got[2 * FLOATS];
	const struct tp_op_split cut = { .rows = 2 * FLOATS, .in = 3, .out = 1 };
	struct tp_tensor *y, *c, *d, *in[2], *o;
	struct tp_stats st0, st;
	bool same = true;
	uint64_t ns;
	int ret;

	ctx = host_ctx("32K");
	d = to_regenerate(5, 2 * CHUNK, 3, dv, &y);
	c = tops_input(ctx, 2 * FLOATS, 4);
	o = c ? tp_tensor_create(ctx, 2 * CHUNK, 0) : NULL;
	if (!o || tp_tensor_read(ctx, c, 0, cv, sizeof(cv)))
		bail_out("c, o: %s", tp_last_error(ctx));
	in[0] = c;
	in[1] = d;
	tp_stats_get(ctx, &st0);
	ret = tp_lin_run_split(ctx->lineage, &tops_addrows, NULL, 0, in, 2, &o, 1,
			       &cut, false, 2, &ns);
	tp_stats_get(ctx, &st);
	if (ret)
		diag("%s", tp_last_error(ctx));
	ok(!ret && st.recomputes == st0.recomputes + 1,
	   "in parts: part 0 holding c, d's regeneration finds room once d comes first (%s; %llu recomputes)",
	   ret ? tp_strerror(ret) : "0",
	   (unsigned long long)(st.recomputes - st0.recomputes));
	if (!ret && !tp_tensor_read(ctx, o, 0, got, sizeof(got)))
		for (size_t i = 0; i < 2 * FLOATS; i++) {
			float want = cv[i] + dv[i];

			same &= !memcmp(&want, &got[i], sizeof(want));
		}
	else
		same = false;
	ok(same, "in parts: the output is c + d, bit for bit");
	tp_tensor_free(ctx, o);
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, d);
	tp_tensor_free(ctx, y);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_tensor *x, *a, *b, *o;
	struct tp_stats st0, st;
	float now[FLOATS];
	int ret;

	plan_tests(8);
	ctx = host_ctx("20K");
	b = to_regenerate(4, CHUNK, 1, bv, &x);
	a = tops_input(ctx, FLOATS, 2);
	if (!a || tp_tensor_read(ctx, a, 0, av, sizeof(av)))
		bail_out("a: %s", tp_last_error(ctx));

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
	in_parts();
	return exit_status();
}
