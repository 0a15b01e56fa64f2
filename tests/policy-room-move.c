// SPDX-License-Identifier: MIT
/*
 * The overlap filter where the driver charges per handle (the sim's h200
 * profile): a victim of the size of the tensor the room is made for
 * leaves its range as that room (pager.move_evicted), so its eviction
 * costs no remap, and the filter charges it none.
 *
 * p (1 chunk) makes b (8 chunks), then a (2 chunks), both computable at
 * 1 us, then an op of 1 ms makes d (1 chunk); c (2 chunks) needs room in
 * a budget of 12. By m*d/x alone b goes: it is the staler, and each of
 * its chunks and a's costs a handle's remap (tens of us against the 1 us
 * op), so both free as many bytes for the cost. But a's range is c's
 * room: a goes, c takes its address, and the op that makes c calls the
 * driver for nothing. With pager.move_evicted off, b goes and c is
 * mapped. (Victims leave whole: policy.partial_evict is another choice.)
 */
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "pager/tensor.h"
#include "tests/tap.h"

#define CHUNK	(2u << 20)

static int nothing(const struct tp_op_launch *l)
{
	(void)l;
	return 0;
}

static uint64_t one_ms(const void *params, size_t params_len,
		       const size_t *in_bytes, unsigned n_in)
{
	(void)params;
	(void)params_len;
	(void)in_bytes;
	(void)n_in;
	return 1000000;
}

static const struct tp_op_type make = { .name = "make", .launch = nothing };
static const struct tp_op_type slow = {
	.name = "slow", .launch = nothing, .cost_ns = one_ms,
};

static struct tp_tensor *run(struct tp_ctx *ctx, const struct tp_op_type *type,
			     struct tp_tensor *in, size_t chunks)
{
	struct tp_tensor *out = NULL;
	size_t bytes = chunks * CHUNK;

	if (tp_op_run(ctx, type, NULL, 0, &in, 1, &out, &bytes, 1))
		bail_out("op: %s", tp_last_error(ctx));
	return out;
}

static uint64_t driver_calls(struct tp_ctx *ctx)
{
	struct tp_stats st;

	if (tp_stats_get(ctx, &st))
		bail_out("tp_stats_get");
	return st.driver_calls;
}

static void room(bool move)
{
	struct tp_tensor *p, *a, *b, *c;
	struct tp_ctx *ctx;
	uintptr_t a_at;
	uint64_t calls;
	char opts[320];

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.sim.profile=h200,vmm.chunk_size=2M,"
		 "pager.budget=%uM,pager.slab_fraction=0,"
		 "pager.high_watermark=100,pager.rescue=0,policy.prefetch=0,"
		 "policy.costs=model,policy.partial_evict=off,"
		 "pager.move_evicted=%d", 12 * 2, move);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create(%s)", opts);
	p = tp_tensor_create(ctx, CHUNK, TP_UNCOMPUTABLE);
	if (!p)
		bail_out("tp_tensor_create");
	b = run(ctx, &make, p, 8);
	a = run(ctx, &make, p, 2);
	run(ctx, &slow, p, 1);
	a_at = a->va;
	if (tp_sync(ctx))
		bail_out("tp_sync");
	calls = driver_calls(ctx);
	c = run(ctx, &make, p, 2);
	if (tp_sync(ctx))
		bail_out("tp_sync");
	calls = driver_calls(ctx) - calls;
	if (move) {
		ok(a->evicted_pages == 2 && b->resident_pages == 8,
		   "the victim is a, of c's size, not b (a %zu evicted, b %zu resident)",
		   a->evicted_pages, b->resident_pages);
		ok(c->va == a_at && calls == 0,
		   "c takes a's range: its op calls the driver %llu times",
		   (unsigned long long)calls);
	} else {
		ok(b->evicted_pages == 8 && a->resident_pages == 2 && calls > 0,
		   "pager.move_evicted off: b goes, and c is mapped (%llu driver calls)",
		   (unsigned long long)calls);
	}
	tp_ctx_destroy(ctx);
}

int main(void)
{
	plan_tests(3);
	room(true);
	room(false);
	return exit_status();
}
