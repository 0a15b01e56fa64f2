/* SPDX-License-Identifier: MIT */
/*
 * Bad use of tp_op_run() and failures while running or replaying ops:
 * each is a clear error, no output is left behind, no record is kept, and
 * the inputs stay readable with their data.
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

#define N	16384		/* floats: one 64K chunk */

static struct tp_ctx *ctx;
static float *pa, *pb, *got;
static const size_t bytes = N * sizeof(float);
static bool fail_replays;

/* out = a, but a replay fails while fail_replays is set. */
static int flaky_launch(const struct tp_op_launch *l)
{
	if (l->recompute && fail_replays)
		return -EIO;
	memcpy(l->out[0], l->in[0], l->in_bytes[0]);
	return 0;
}

static const struct tp_op_type flaky = { .name = "flaky", .launch = flaky_launch };
static const struct tp_op_type bad_inplace = {
	.name = "bad_inplace", .launch = flaky_launch, .flags = TP_OP_INPLACE,
	.inplace_out = 1, .inplace_in = 0,
};

static uint64_t nrecords(void)
{
	struct tp_lineage_stats st;

	tp_lineage_get_stats(ctx->lineage, &st);
	return st.records;
}

static uint64_t nlive(void)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	return st.tensors_live;
}

static bool intact(struct tp_tensor *t, const float *want)
{
	return !tp_tensor_read(ctx, t, 0, got, bytes) &&
	       !memcmp(got, want, bytes);
}

int main(void)
{
	struct tp_tensor *a, *b, *c, *f, *g, *out[2], *in[2];
	size_t sz[2] = { bytes, bytes }, big = 1ULL << 30, zero = 0;
	const int eio = EIO;
	uint64_t recs, live;
	int ret;

	plan_tests(33);
	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=16M,pager.slab_fraction=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	pa = malloc(bytes);
	pb = malloc(bytes);
	got = malloc(bytes);
	a = tops_input(ctx, N, 5);
	ok(a && !tp_tensor_read(ctx, a, 0, pa, bytes), "input a");
	c = NULL;
	ok(!tp_op_run(ctx, &tops_softsign, NULL, 0, &a, 1, &c, &bytes, 1) &&
	   !tp_tensor_read(ctx, c, 0, pb, bytes), "b = softsign(a)");
	b = c;
	recs = nrecords();
	live = nlive();

	/* Arguments. */
	out[0] = NULL;
	ok(tp_op_run(ctx, NULL, NULL, 0, &a, 1, out, &bytes, 1) == -EINVAL,
	   "no type: -EINVAL");
	ok(tp_op_run(ctx, &tops_softsign, NULL, 0, NULL, 1, out, &bytes, 1) == -EINVAL,
	   "no inputs: -EINVAL");
	ok(tp_op_run(ctx, &tops_softsign, NULL, 0, &a, 1, out, &bytes, 0) == -EINVAL,
	   "no outputs: -EINVAL");
	ok(tp_op_run(ctx, &tops_softsign, NULL, 0, &a, 1, out, &zero, 1) == -EINVAL,
	   "an output of 0 bytes: -EINVAL");
	ok(tp_op_run(ctx, &tops_scale, NULL, 8, &a, 1, out, &bytes, 1) == -EINVAL,
	   "params_len without params: -EINVAL");
	ok(tp_op_run(ctx, &bad_inplace, NULL, 0, &b, 1, out, &bytes, 1) == -EINVAL &&
	   strstr(tp_last_error(ctx), "out of range"),
	   "in-place output out of range: %s", tp_last_error(ctx));
	sz[0] = bytes / 2;
	ok(tp_op_run(ctx, &tops_relu_, NULL, 0, &b, 1, out, sz, 1) == -EINVAL &&
	   strstr(tp_last_error(ctx), "in-place"),
	   "in-place output of another size: %s", tp_last_error(ctx));
	sz[0] = bytes;
	ok(out[0] == NULL && nrecords() == recs && nlive() == live,
	   "no output, no record, no tensor made");
	ok(tp_tensor_acquire(ctx, b, TP_READ) != NULL, "acquire b");
	ok(tp_op_run(ctx, &tops_relu_, NULL, 0, &b, 1, out, &bytes, 1) == -EBUSY &&
	   strstr(tp_last_error(ctx), "acquired"),
	   "in place on an acquired input: -EBUSY (%s)", tp_last_error(ctx));
	tp_tensor_release(ctx, b);
	ok(out[0] == NULL && nrecords() == recs && nlive() == live &&
	   intact(b, pb), "no output, no record, b unchanged");

	/* A wrong output size, found by the launch function. */
	in[0] = a;
	in[1] = b;
	sz[0] = bytes - 4;
	ret = tp_op_run(ctx, &tops_add, NULL, 0, in, 2, out, sz, 1);
	ok(ret == -EINVAL && strstr(tp_last_error(ctx), "launch failed"),
	   "add with a wrong output size: %s", tp_last_error(ctx));
	sz[0] = bytes;
	ok(out[0] == NULL && nrecords() == recs && nlive() == live,
	   "no output, no record, no tensor left");
	ok(intact(a, pa) && intact(b, pb), "inputs readable, same data");

	/* A launch that fails, with an input that had to be regenerated. */
	ok_rc(tp_tensor_evict(ctx, b), "evict b");
	ret = tp_op_run(ctx, &tops_fail, &eio, sizeof(eio), &b, 1, out, &bytes, 1);
	ok(ret == -EIO && out[0] == NULL, "a launch failing with EIO: -EIO");
	ok(nrecords() == recs && nlive() == live && intact(b, pb),
	   "nothing kept, b regenerated and intact");

	/* Not enough memory for the output. */
	ret = tp_op_run(ctx, &tops_softsign, NULL, 0, &a, 1, out, &big, 1);
	ok(ret == -ENOMEM || ret == -EINVAL, "an output beyond the budget: %s",
	   tp_strerror(ret));
	ok(out[0] == NULL && nrecords() == recs && nlive() == live &&
	   intact(a, pa), "nothing kept, input intact");

	/* A freed tensor as input. */
	f = NULL;
	ok(!tp_op_run(ctx, &tops_softsign, NULL, 0, &b, 1, &f, &bytes, 1), "f = softsign(b)");
	c = NULL;
	ok(!tp_op_run(ctx, &tops_softsign, NULL, 0, &f, 1, &c, &bytes, 1), "c = softsign(f)");
	ok_rc(tp_tensor_free(ctx, f), "free f (fake deletion: c needs it)");
	recs = nrecords();
	live = nlive();
	ret = tp_op_run(ctx, &tops_softsign, NULL, 0, &f, 1, out, &bytes, 1);
	ok(ret == -EINVAL && strstr(tp_last_error(ctx), "was freed"),
	   "an op on a freed tensor: %s", tp_last_error(ctx));
	ok(out[0] == NULL && nrecords() == recs && nlive() == live,
	   "no output, no record");

	/* A replay that fails: the pages stay evicted, nothing else moves. */
	ok(!tp_op_run(ctx, &flaky, NULL, 0, &a, 1, &f, &bytes, 1), "f = flaky(a)");
	g = NULL;
	ok(!tp_op_run(ctx, &tops_softsign, NULL, 0, &f, 1, &g, &bytes, 1),
	   "g = softsign(f)");
	ok(!tp_tensor_evict(ctx, f) && !tp_tensor_evict(ctx, g), "evict f and g");
	fail_replays = true;
	ret = tp_tensor_read(ctx, g, 0, got, bytes);
	ok(ret == -EIO && tp_pager_has_evicted(f) && tp_pager_has_evicted(g),
	   "a failing replay of f: -EIO, f and g still evicted");
	fail_replays = false;
	ok(intact(f, pa), "the next read regenerates f");
	ok(intact(g, pb), "and g");
	tp_tensor_free(ctx, g);

	tp_tensor_free(ctx, f);
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, b);
	tp_tensor_free(ctx, a);
	ok(nrecords() == 0 && nlive() == 0, "nothing left");
	tp_ctx_destroy(ctx);
	free(pa);
	free(pb);
	free(got);
	return exit_status();
}
