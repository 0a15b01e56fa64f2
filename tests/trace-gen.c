// SPDX-License-Identifier: MIT
/*
 * The synthetic training-iteration generator: the cost model's numbers,
 * option checks, a tiny CNN whose peak is derived by hand, a transformer
 * with views and Adam, steady state across iterations (nothing but
 * parameters and optimizer state survives an iteration), determinism, and
 * a lossless trip through tpager-trace(5).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_gen.h"
#include "tests/tap.h"

static bool roundtrip(const struct tp_trace *t)
{
	struct tp_trace_error err;
	struct tp_trace *t2 = NULL;
	char *text = NULL;
	size_t len = 0;
	bool same;
	FILE *f = open_memstream(&text, &len);

	if (!f || tp_trace_write(t, f))
		return false;
	fclose(f);
	if (tp_trace_parse(text, len, "gen", &t2, &err)) {
		diag("%s:%lu: %s", err.file, err.line, err.reason);
		free(text);
		return false;
	}
	same = tp_trace_equal(t, t2);
	tp_trace_free(t2);
	free(text);
	return same;
}

/* Live tensors at the end are exactly the parameters and their state. */
static bool only_state_survives(const struct tp_trace *t, uint64_t *bytes)
{
	*bytes = 0;
	for (size_t i = 0; i < t->n_tensors; i++) {
		const struct tp_trace_tensor *x = &t->tensors[i];

		if (x->state != TP_TRACE_LIVE)
			continue;
		if (x->flags != TP_TRACE_PARAM && x->flags != TP_TRACE_OPTSTATE)
			return false;
		*bytes += x->size;
	}
	return true;
}

/* Live bytes at every ITER event, which must all be equal. */
static bool steady(const struct tp_trace *t, uint64_t want)
{
	uint64_t live = 0;
	uint32_t *n = calloc(t->n_storages + 1, sizeof(*n));
	bool good = true;

	if (!n)
		bail_out("out of memory");
	for (size_t i = 0; i < t->n_events; i++) {
		const struct tp_trace_event *e = &t->events[i];
		const struct tp_trace_op *op;

		switch (e->kind) {
		case TP_TRACE_EV_ITER:
			good &= live == want;
			break;
		case TP_TRACE_EV_TENSOR:
			if (!n[t->tensors[e->arg].storage]++)
				live += t->storages[t->tensors[e->arg].storage].size;
			break;
		case TP_TRACE_EV_FREE:
			if (!--n[t->tensors[e->arg].storage])
				live -= t->storages[t->tensors[e->arg].storage].size;
			break;
		case TP_TRACE_EV_OP:
			op = &t->ops[e->arg];
			for (unsigned j = 0; j < op->n_outs; j++) {
				const struct tp_trace_out *o = &t->outs[op->first_out + j];
				uint32_t s = t->tensors[o->tensor].storage;

				/* In place: one version replaces another. */
				if (o->kind == TP_TRACE_OUT_INPLACE)
					continue;
				if (!n[s]++)
					live += t->storages[s].size;
			}
			break;
		}
	}
	free(n);
	return good && live == want;
}

static void test_cost(void)
{
	/* One millisecond of each resource, plus the 2 us launch. */
	ok(tp_trace_gen_cost(494.7e9, 0, true) == 1002000 &&
	   tp_trace_gen_cost(66.9e9, 0, false) == 1002000 &&
	   tp_trace_gen_cost(0, 3.35e9, false) == 1002000 &&
	   tp_trace_gen_cost(0, 3.35e9, true) == 1002000,
	   "H100 roofline: 494.7 TFLOP/s TF32, 66.9 FP32, 3.35 TB/s, +2 us");
	ok(tp_trace_gen_cost(494.7e9, 2 * 3.35e9, true) == 2002000 &&
	   tp_trace_gen_cost(2 * 494.7e9, 3.35e9, true) == 2002000,
	   "the slower of compute and memory bounds the op");
	ok(tp_trace_gen_cost(0, 0, false) == 2000, "an empty op costs the launch");
}

static void test_options(void)
{
	struct tp_trace_gen_opts o = {
		.model = TP_TRACE_GEN_CNN, .batch = 2, .layers = 1, .width = 4,
		.extent = 8, .classes = 10, .iterations = 1,
	};
	struct tp_trace *t = (struct tp_trace *)&o;

	o.extent = 6;
	ok(tp_trace_generate(&o, &t) == -EINVAL, "CNN side not a multiple of 4");
	o.extent = 8;
	o.batch = 0;
	ok(tp_trace_generate(&o, &t) == -EINVAL, "zero batch");
	o.batch = 2;
	o.model = TP_TRACE_GEN_TRANSFORMER;
	o.heads = 3;
	ok(tp_trace_generate(&o, &t) == -EINVAL &&
	   t == (struct tp_trace *)&o, "heads not dividing width; out untouched");
}

static void test_tiny_cnn(void)
{
	struct tp_trace_gen_opts o = {
		.model = TP_TRACE_GEN_CNN, .optim = TP_TRACE_GEN_SGD,
		.batch = 2, .layers = 1, .width = 4, .extent = 8,
		.classes = 10, .iterations = 1,
	};
	struct tp_trace *t = NULL, *t2 = NULL;
	struct tp_trace_summary s;
	uint64_t state = 0;
	int rc;

	rc = tp_trace_generate(&o, &t);
	if (!ok_rc(rc, "tiny CNN generated"))
		bail_out("cannot generate");
	/*
	 * Parameters: stem conv 4x3x3x3 (432 B), 2 bn of 4 (16 B each), two
	 * 4x4x3x3 convs (576 B) with their bn, fc 4x10 (160 B): 1840 B, and
	 * as much momentum.
	 */
	ok(only_state_survives(t, &state) && state == 3680,
	   "only parameters and momentum survive: %llu B == 3680",
	   (unsigned long long)state);
	/*
	 * 12 forward ops, 15 backward, 10 parameter updates: stem conv, bn,
	 * relu_; block conv, bn, relu_, conv, bn, add, relu_; pool, fc,
	 * loss; ones, loss_bw, fc_bw, pool_bw, relu_bw; bn_bw, conv_bw,
	 * relu_bw, bn_bw, conv_bw, add_; stem relu_bw, bn_bw, conv_bw_weight.
	 */
	ok(t->n_ops == 37 && t->n_storages == 54 && t->n_tensors == 78,
	   "37 ops, 78 tensors, 54 storages");
	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	/*
	 * The peak is at the block's first conv2d_bw: state 3680, batch
	 * 1536 + 8, nine 2048 B activations and gradients (stem conv and
	 * relu, c1, r1, the sum's gradient, d r1, relu_bw and bn_bw outputs,
	 * the new d input), bn parameter gradients 4 x 16, conv weight
	 * gradients 2 x 576, the fc gradient 160: 25032.
	 */
	ok(s.peak_bytes == 25032 && s.start_bytes == 3680 &&
	   s.end_bytes == 3680, "peak %llu == 25032, start and end 3680",
	   (unsigned long long)s.peak_bytes);
	ok(!strcmp(tp_trace_op_name(t, s.peak_event < t->n_events &&
				    t->events[s.peak_event].kind == TP_TRACE_EV_OP ?
				    t->events[s.peak_event].arg : 0),
		   "conv2d_bw"), "reached at conv2d_bw");
	/* First conv: 2*2*8*8*4*3*9 FLOPs, 1536 + 432 + 2048 bytes. */
	ok(t->ops[0].cost_ns == tp_trace_gen_cost(27648, 4016, true) &&
	   t->ops[0].cost_ns == 2001, "first conv costs %llu ns",
	   (unsigned long long)t->ops[0].cost_ns);
	ok(roundtrip(t), "text round trip");
	ok(!tp_trace_generate(&o, &t2) && tp_trace_equal(t, t2),
	   "generated twice: the same trace");
	tp_trace_free(t);
	tp_trace_free(t2);
}

static void test_transformer(void)
{
	struct tp_trace_gen_opts o = {
		.model = TP_TRACE_GEN_TRANSFORMER, .optim = TP_TRACE_GEN_ADAM,
		.batch = 2, .layers = 2, .width = 8, .extent = 4, .heads = 2,
		.classes = 16, .iterations = 3,
	};
	struct tp_trace *t = NULL;
	struct tp_trace_summary s;
	uint64_t state = 0, views = 0, splits = 0;
	int rc;

	rc = tp_trace_generate(&o, &t);
	if (!ok_rc(rc, "tiny transformer generated"))
		bail_out("cannot generate");
	/*
	 * Elements: embedding 16x8, positions 4x8, per layer 2 norms (4x8),
	 * Wqkv 8x24, Wo 8x8, W1 8x32, W2 32x8 (800 with the norms), final
	 * norm 16: 1776 x 4 B, with Adam's two moments x 3.
	 */
	ok(only_state_survives(t, &state) && state == 1776 * 4 * 3,
	   "only parameters and both moments survive: %llu B",
	   (unsigned long long)state);
	ok(steady(t, state), "every iteration starts with exactly that");
	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	ok(s.region_ops * 3 == t->n_ops && s.start_bytes == state &&
	   s.end_bytes == state && s.peak_bytes > state,
	   "the last of 3 identical iterations is measured (%llu ops)",
	   (unsigned long long)s.region_ops);
	for (size_t i = 0; i < t->n_ops; i++) {
		const struct tp_trace_op *op = &t->ops[i];

		if (strcmp(tp_trace_op_name(t, (uint32_t)i), "split"))
			continue;
		splits++;
		for (unsigned j = 0; j < op->n_outs; j++) {
			const struct tp_trace_out *x = &t->outs[op->first_out + j];

			views += x->kind == TP_TRACE_OUT_VIEW &&
				 t->tensors[x->tensor].storage ==
				 t->tensors[t->args[op->first_arg]].storage;
		}
	}
	ok(splits == 6 && views == 18, "q, k, v: views of the projection");
	{
		/* Layer 0's qkv projection: the third op of iteration 0. */
		const struct tp_trace_op *op = &t->ops[2];
		double m = 8, k = 8, n = 24;

		ok(!strcmp(tp_trace_op_name(t, 2), "matmul") &&
		   op->cost_ns == tp_trace_gen_cost(2 * m * k * n,
						    (m * k + k * n + m * n) * 4,
						    true),
		   "matmul cost from its FLOPs and bytes");
	}
	ok(roundtrip(t), "text round trip");
	tp_trace_free(t);
}

int main(void)
{
	plan_tests(3 + 3 + 9 + 8);
	test_cost();
	test_options();
	test_tiny_cnn();
	test_transformer();
	return exit_status();
}
