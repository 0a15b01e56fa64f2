// SPDX-License-Identifier: MIT
/*
 * What the models' tape keeps for the backward pass: a tensor of the step
 * is kept only while a backward op still to run reads it. ReLU's backward
 * reads its output, so the ReLU's input is freed once the forward pass is
 * done with it (tp_model_done()); a linear's input, which its backward
 * reads, is not; an add's operands, which its backward does not read, are.
 * A whole step of a model whose activations are freed so still trains the
 * same, bit for bit, under a budget (tests/kernels-models.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/model_int.h"
#include "tests/tap.h"

#define N	4
#define D	8

int main(void)
{
	struct tp_model_opts mo = { .name = "mlp", .seed = 1 };
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=host");
	struct tp_model *m = ctx ? tp_model_create(ctx, &mo) : NULL;
	struct tp_eltwise_params ew = { .count = N * D };
	struct tp_linear_params lp = { .n = N, .in = D, .out = D };
	float data[N * D];
	struct tp_mvar *x, *y, *w, *z, *a, *b, *s, *in[2];

	plan_tests(7);
	if (!m) {
		skip(7, "no model: %s", strerror(errno));
		return exit_status();
	}
	for (unsigned i = 0; i < N * D; i++)
		data[i] = (float)i - 10.0f;
	x = tp_model_input(m, data, sizeof(data));
	y = tp_model_op(m, "relu", &ew, sizeof(ew), &x, 1, NULL);
	ok(x && y && x->t && y->t && !x->refs && y->refs == 1,
	   "relu: its backward holds its output, not its input");
	tp_model_done(m, x);
	ok(!x->t, "relu's input, done with, is freed at once");

	in[0] = y;
	in[1] = w = tp_model_param(m, D * D, TP_INIT_NORMAL, 0.1f);
	z = tp_model_op(m, "linear", &lp, sizeof(lp), in, 2, NULL);
	tp_model_done(m, y);
	ok(z && y->t && y->refs == 2 && w->refs == 1,
	   "linear: its input, done with, stays for its backward (and relu's)");
	ok(z && z->t && !z->refs, "linear: its output is held by no backward op");

	a = tp_model_input(m, data, sizeof(data));
	b = tp_model_op(m, "relu", &ew, sizeof(ew), &a, 1, NULL);
	in[0] = a;
	in[1] = b;
	s = tp_model_op(m, "add", &ew, sizeof(ew), in, 2, NULL);
	ok(s && a->t && !a->refs && b->refs == 1,
	   "add: its backward reads neither operand");
	tp_model_done(m, a);
	tp_model_done(m, b);
	ok(!a->t && b->t, "add: an operand no backward op reads is freed, one "
	   "another reads stays");
	tp_model_done(m, z);
	tp_model_done(m, a);
	ok(!z->t && !a->t && y->t && b->t,
	   "done with again: nothing more is freed");
	tp_model_end_step(m);
	tp_model_destroy(m);
	tp_ctx_destroy(ctx);
	return exit_status();
}
