// SPDX-License-Identifier: MIT
/*
 * Small cases of every CPU op against values worked out by hand, the
 * registry's lookups and cost model, and the launch checks: a launch that
 * does not match its op's shapes fails with -EINVAL and writes nothing.
 *
 * Results that are exact in float (sums of small integers, halves) are
 * compared for equality; those that go through exp, erf, sqrt or a
 * non-representable decimal are compared to 1e-6 relative.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "tests/tap.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Run op @name with the byte sizes its shape function gives. */
static int run(const char *name, const void *params, size_t params_len,
	       void *const *in, unsigned n_in, void *const *out, unsigned n_out)
{
	const struct tp_op_type *t = tp_kernels_find(name);
	size_t in_bytes[8], out_bytes[8];
	unsigned ni, no;
	struct tp_op_launch l = {
		.type = t, .params = params, .params_len = params_len,
		.in = in, .in_bytes = in_bytes, .n_in = n_in,
		.out = out, .out_bytes = out_bytes, .n_out = n_out,
	};
	int rc;

	if (!t)
		return -ENOENT;
	rc = tp_kernels_shape(t, params, params_len, in_bytes, &ni, out_bytes,
			      &no);
	if (rc)
		return rc;
	return t->launch(&l);
}

#define RUN(name, p, in, out) \
	run(name, &(p), sizeof(p), (void *const *)(in), ARRAY_SIZE(in), \
	    (void *const *)(out), ARRAY_SIZE(out))

static bool same(const float *got, const float *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (got[i] != want[i]) {
			diag("[%zu]: got %.9g, want %.9g", i, got[i], want[i]);
			return false;
		}
	return true;
}

static bool near(const float *got, const double *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fabs(got[i] - want[i]) > 1e-6 * fmax(1.0, fabs(want[i]))) {
			diag("[%zu]: got %.9g, want %.9g", i, got[i], want[i]);
			return false;
		}
	return true;
}

static void test_linear(void)
{
	struct tp_linear_params p = { .n = 2, .in = 2, .out = 3, .bias = 1 };
	float x[] = { 1, 2, 3, 4 }, w[] = { 1, 0, 0, 1, 1, 1 };
	float b[] = { 0.5f, -1, 2 }, y[6];
	float want[] = { 1.5f, 1, 5, 3.5f, 3, 9 };
	float dy[] = { 1, 0, 1, 0, 2, -1 }, dx[4], dw[6], db[3];
	/* dx = dy W; dW = dy^T x; db = column sums of dy */
	float want_dx[] = { 2, 1, -1, 1 };
	float want_dw[] = { 1, 2, 6, 8, -2, -2 }, want_db[] = { 1, 2, 0 };
	void *in[] = { x, w, b }, *out[] = { y };
	void *bin[] = { dy, x, w }, *bout[] = { dx, dw, db };

	ok(!RUN("linear", p, in, out) && same(y, want, 6),
	   "linear: y = x W^T + b");
	ok(!RUN("linear_bwd", p, bin, bout) && same(dx, want_dx, 4) &&
	   same(dw, want_dw, 6) && same(db, want_db, 3),
	   "linear_bwd: dx, dW, db");
}

static void test_gemm(void)
{
	/* two batches: A0 = [1 2; 3 4], A1 = I; B0 = [5 6; 7 8], B1 = B0 */
	float a[] = { 1, 2, 3, 4, 1, 0, 0, 1 }, b[] = { 5, 6, 7, 8, 5, 6, 7, 8 };
	float c[8];
	float nn[] = { 19, 22, 43, 50, 5, 6, 7, 8 };
	float tn[] = { 52, 60, 76, 88, 10, 12, 14, 16 };	/* 2 A^T B */
	float nt[] = { 17, 23, 39, 53, 5, 7, 6, 8 };		/* A B^T */
	struct tp_gemm_params p = { .batch = 2, .m = 2, .n = 2, .k = 2,
				    .alpha = 1 };
	void *in[] = { a, b }, *out[] = { c };

	ok(!RUN("gemm", p, in, out) && same(c, nn, 8), "gemm: batched A B");
	p.trans_a = 1;
	p.alpha = 2;
	ok(!RUN("gemm", p, in, out) && same(c, tn, 8),
	   "gemm: batched 2 A^T B");
	p.trans_a = 0;
	p.trans_b = 1;
	p.alpha = 1;
	ok(!RUN("gemm", p, in, out) && same(c, nt, 8), "gemm: batched A B^T");
}

static void test_conv(void)
{
	float x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, y[4];
	float w1[] = { 1, 0, 0, 1 };
	float w3[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, b[] = { 1 };
	struct tp_conv2d_params p = {
		.n = 1, .c = 1, .h = 3, .w = 3, .k = 1, .r = 2, .s = 2,
		.stride_h = 1, .stride_w = 1,
	};
	float want1[] = { 6, 8, 12, 14 }, want3[] = { 13, 17, 25, 29 };
	float dy[] = { 1, 1, 1, 1 }, dx[9], dw[4];
	/* each x element counted once per window covering it */
	float want_dx[] = { 1, 1, 0, 1, 2, 1, 0, 1, 1 };
	/* dW[i][j] = sum of the 2x2 block of x offset by (i, j) */
	float want_dw[] = { 12, 16, 24, 28 };
	void *in1[] = { x, w1 }, *in3[] = { x, w3, b }, *out[] = { y };
	void *bin[] = { dy, x, w1 }, *bout[] = { dx, dw };

	ok(!RUN("conv2d", p, in1, out) && same(y, want1, 4),
	   "conv2d: 2x2 diagonal filter, stride 1");
	ok(!RUN("conv2d_bwd", p, bin, bout) && same(dx, want_dx, 9) &&
	   same(dw, want_dw, 4), "conv2d_bwd: dx, dW");
	p.r = p.s = 3;
	p.stride_h = p.stride_w = 2;
	p.pad_h = p.pad_w = 1;
	p.bias = 1;
	ok(!RUN("conv2d", p, in3, out) && same(y, want3, 4),
	   "conv2d: 3x3 box, stride 2, pad 1, bias");
}

/* A workspace input is accepted by the convolutions only; the CPU ignores
 * it, and no backend but cuda wants one. */
static void test_workspace(void)
{
	struct tp_conv2d_params p = {
		.n = 1, .c = 1, .h = 3, .w = 3, .k = 1, .r = 2, .s = 2,
		.stride_h = 1, .stride_w = 1,
	};
	struct tp_eltwise_params ep = { .count = 4 };
	float x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, w[] = { 1, 0, 0, 1 };
	float y[4], ws[64], want[] = { 6, 8, 12, 14 };
	float keep[4] = { 7, 7, 7, 7 }, r[4] = { 7, 7, 7, 7 };
	size_t in_bytes[] = { sizeof(x), sizeof(w), sizeof(ws) };
	size_t out_bytes[] = { sizeof(y) };
	void *in[] = { x, w, ws }, *out[] = { y };
	struct tp_op_launch l = {
		.type = tp_kernels_find("conv2d"), .params = &p,
		.params_len = sizeof(p), .in = in, .in_bytes = in_bytes,
		.n_in = 3, .out = out, .out_bytes = out_bytes, .n_out = 1,
	};
	size_t bytes = 1;

	ok(!l.type->launch(&l) && same(y, want, 4),
	   "conv2d: a workspace input changes nothing on the CPU");
	l.type = tp_kernels_find("relu");
	l.params = &ep;
	l.params_len = sizeof(ep);
	out[0] = r;
	ok(l.type->launch(&l) == -EINVAL && same(r, keep, 4),
	   "relu: one input too many is -EINVAL");
	ok(!tp_kernels_workspace_bytes(NULL, tp_kernels_find("conv2d"), &p,
				       sizeof(p), &bytes) && bytes == 0,
	   "workspace: none off the cuda backend");
	p.stride_h = 0;
	ok(tp_kernels_workspace_bytes(NULL, tp_kernels_find("conv2d"), &p,
				      sizeof(p), &bytes) == -EINVAL,
	   "workspace: bad params are -EINVAL");
}

static void test_norms(void)
{
	/* mean 2.5, biased var 1.25; with eps 0.3125 invstd is 0.8 */
	struct tp_batchnorm_params bp = { .n = 2, .c = 1, .hw = 2,
					  .eps = 0.3125f };
	struct tp_layernorm_params lp = { .rows = 1, .cols = 4,
					  .eps = 0.3125f };
	float x[] = { 1, 2, 3, 4 }, y[4], mean[1], invstd[1];
	float g2[] = { 2 }, b1[] = { 1 }, g4[] = { 1, 1, 1, 1 };
	float b4[] = { 0, 0, 0, 0 };
	double want_bn[] = { -1.4, 0.2, 1.8, 3.4 }, want_ln[] = { -1.2, -0.4,
								 0.4, 1.2 };
	double stats[] = { 2.5, 0.8 };
	float dy[] = { 1, 1, 1, 1 }, dx[4], dg[4], dbeta[4];
	double zeros[] = { 0, 0, 0, 0 }, want_dg[] = { -1.2, -0.4, 0.4, 1.2 };
	void *bin_[] = { x, g2, b1 }, *bout[] = { y, mean, invstd };
	void *lin[] = { x, g4, b4 };
	void *lbin[] = { dy, x, g4, mean, invstd }, *lbout[] = { dx, dg, dbeta };
	float ms[2];

	ok(!RUN("batchnorm", bp, bin_, bout) && near(y, want_bn, 4) &&
	   (ms[0] = mean[0], ms[1] = invstd[0], near(ms, stats, 2)),
	   "batchnorm: y, mean 2.5, invstd 0.8");
	ok(!RUN("layernorm", lp, lin, bout) && near(y, want_ln, 4) &&
	   (ms[0] = mean[0], ms[1] = invstd[0], near(ms, stats, 2)),
	   "layernorm: y, mean 2.5, invstd 0.8");
	/* a constant upstream gradient has no effect through a norm */
	ok(!RUN("layernorm_bwd", lp, lbin, lbout) && near(dx, zeros, 4) &&
	   near(dg, want_dg, 4) && same(dbeta, dy, 4),
	   "layernorm_bwd: dx 0, dgamma = xhat, dbeta = dy");
}

/*
 * The models' tape gives relu_bwd the output y in place of x (so that x,
 * a batch-norm's output, is freed after the forward ReLU): the same bits
 * wherever x > 0 and y > 0 could part, -0, NaN, subnormals, infinities.
 */
static void relu_mask_from_output(void)
{
	float x[] = { -0.0f, 0.0f, NAN, -NAN, 1e-45f, -1e-45f, INFINITY,
		      -INFINITY, 1.17549421e-38f, -2.5f, 3.0f, -1e-30f };
	struct tp_eltwise_params p = { .count = ARRAY_SIZE(x) };
	float y[ARRAY_SIZE(x)], dy[ARRAY_SIZE(x)];
	float from_x[ARRAY_SIZE(x)], from_y[ARRAY_SIZE(x)];
	void *in[] = { x }, *out[] = { y };
	void *bx[] = { dy, x }, *by[] = { dy, y };
	void *ox[] = { from_x }, *oy[] = { from_y };

	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		dy[i] = (float)i + 0.5f;
	ok(!RUN("relu", p, in, out) && !RUN("relu_bwd", p, bx, ox) &&
	   !RUN("relu_bwd", p, by, oy) &&
	   !memcmp(from_x, from_y, sizeof(from_x)),
	   "relu_bwd: the mask from y is the mask from x, bit for bit");
}

static void test_activations(void)
{
	struct tp_eltwise_params p = { .count = 4 };
	float x[] = { -1, 0, 1, 2 }, y[4], dy[] = { 3, 3, 3, 3 }, dx[4];
	float relu[] = { 0, 0, 1, 2 }, drelu[] = { 0, 0, 3, 3 };
	/* x Phi(x) and Phi(x) + x phi(x), from erf in double */
	double gelu[] = { -0.15865525393145707, 0, 0.8413447460685429,
			  1.9544997361036416 };
	double dgelu[] = { 3 * -0.08331547058768629, 3 * 0.5,
			   3 * 1.0833154705876864, 3 * 1.085231801078197 };
	void *in[] = { x }, *out[] = { y }, *bin[] = { dy, x }, *bout[] = { dx };

	ok(!RUN("relu", p, in, out) && same(y, relu, 4), "relu");
	ok(!RUN("relu_bwd", p, bin, bout) && same(dx, drelu, 4),
	   "relu_bwd: zero at x <= 0");
	relu_mask_from_output();
	ok(!RUN("gelu", p, in, out) && near(y, gelu, 4), "gelu: x Phi(x)");
	ok(!RUN("gelu_bwd", p, bin, bout) && near(dx, dgelu, 4),
	   "gelu_bwd: Phi(x) + x phi(x)");
}

static void test_pools(void)
{
	struct tp_pool_params p = { .n = 1, .c = 1, .h = 4, .w = 4, .r = 2,
				    .s = 2, .stride_h = 2, .stride_w = 2 };
	struct tp_gap_params gp = { .n = 1, .c = 2, .hw = 4 };
	float x[16], y[4], dy[] = { 1, 2, 3, 4 }, dx[16], want_dx[16] = { 0 };
	float max[] = { 6, 8, 14, 16 }, avg[] = { 3.5f, 5.5f, 11.5f, 13.5f };
	float gap[] = { 2.5f, 6.5f }, gy[2], dgap[] = { 4, 8 }, gdx[8];
	float want_gdx[] = { 1, 1, 1, 1, 2, 2, 2, 2 };
	float want_avg_dx[16];
	void *in[] = { x }, *out[] = { y }, *bout[] = { dx };
	void *mbin[] = { dy, x, y }, *abin[] = { dy };
	void *gin[] = { x }, *gout[] = { gy }, *gbin[] = { dgap };
	void *gbout[] = { gdx };
	int i;

	for (i = 0; i < 16; i++) {
		x[i] = (float)(i + 1);
		want_avg_dx[i] = dy[(i / 8) * 2 + (i % 4) / 2] / 4;
	}
	want_dx[5] = 1;
	want_dx[7] = 2;
	want_dx[13] = 3;
	want_dx[15] = 4;
	ok(!RUN("maxpool", p, in, out) && same(y, max, 4), "maxpool 2x2/2");
	ok(!RUN("maxpool_bwd", p, mbin, bout) && same(dx, want_dx, 16),
	   "maxpool_bwd: gradient to each window's maximum");
	ok(!RUN("avgpool", p, in, out) && same(y, avg, 4), "avgpool 2x2/2");
	ok(!RUN("avgpool_bwd", p, abin, bout) && same(dx, want_avg_dx, 16),
	   "avgpool_bwd: a quarter to each element");
	/* x[0..3] = 1..4, x[4..7] = 5..8: two channels of hw = 4 */
	ok(!RUN("global_avgpool", gp, gin, gout) && same(gy, gap, 2),
	   "global_avgpool");
	ok(!RUN("global_avgpool_bwd", gp, gbin, gbout) &&
	   same(gdx, want_gdx, 8), "global_avgpool_bwd");
}

static void test_softmax_xent(void)
{
	struct tp_softmax_params sp = { .rows = 2, .cols = 2 };
	struct tp_xent_params xp = { .n = 2, .classes = 2 };
	float x[] = { 0, 0, 0, (float)log(3.0) }, y[4], loss[1], prob[4];
	double want[] = { 0.5, 0.5, 0.25, 0.75 };
	double want_loss[] = { 0.5 * log(8.0 / 3.0) };
	double want_dx[] = { -0.25, 0.25, 0.125, -0.125 };
	int32_t labels[] = { 0, 1 }, bad[] = { 0, 2 };
	float dloss[] = { 1 }, dx[4], dx_keep[4];
	void *in[] = { x }, *out[] = { y };
	void *xin[] = { x, labels }, *xout[] = { loss, prob };
	void *xbin[] = { dloss, prob, labels }, *xbout[] = { dx };
	void *bad_in[] = { x, bad }, *bad_bin[] = { dloss, prob, bad };

	ok(!RUN("softmax", sp, in, out) && near(y, want, 4), "softmax");
	ok(!RUN("cross_entropy", xp, xin, xout) && near(loss, want_loss, 1) &&
	   near(prob, want, 4), "cross_entropy: mean of -log p[label]");
	ok(!RUN("cross_entropy_bwd", xp, xbin, xbout) && near(dx, want_dx, 4),
	   "cross_entropy_bwd: (p - onehot) / n");
	memcpy(dx_keep, dx, sizeof(dx));
	loss[0] = 42;
	ok(RUN("cross_entropy", xp, bad_in, xout) == -EINVAL &&
	   loss[0] == 42 && RUN("cross_entropy_bwd", xp, bad_bin, xbout) ==
	   -EINVAL && same(dx, dx_keep, 4),
	   "cross_entropy: a label out of range is -EINVAL, nothing written");
}

static void test_embedding(void)
{
	struct tp_embedding_params p = { .n = 3, .vocab = 3, .dim = 2 };
	float table[] = { 1, 2, 3, 4, 5, 6 }, y[6], dy[] = { 1, 1, 2, 2, 3, 3 };
	float want[] = { 5, 6, 1, 2, 5, 6 }, dt[6], want_dt[] = { 2, 2, 0, 0,
								  4, 4 };
	int32_t idx[] = { 2, 0, 2 }, bad[] = { 0, -1, 1 };
	void *in[] = { table, idx }, *out[] = { y };
	void *bin[] = { dy, idx }, *bout[] = { dt };
	void *bad_in[] = { table, bad };

	ok(!RUN("embedding", p, in, out) && same(y, want, 6), "embedding");
	ok(!RUN("embedding_bwd", p, bin, bout) && same(dt, want_dt, 6),
	   "embedding_bwd: repeated tokens sum");
	ok(RUN("embedding", p, bad_in, out) == -EINVAL && same(y, want, 6),
	   "embedding: an index out of range is -EINVAL, nothing written");
}

static void test_eltwise(void)
{
	struct tp_eltwise_params p = { .count = 2, .alpha = 0.5f };
	float a[] = { 1, 2 }, b[] = { 3, 4 }, y[2], da[2], db[2];
	float sum[] = { 4, 6 }, half[] = { 0.5f, 1 };
	void *in[] = { a, b }, *out[] = { y }, *sin_[] = { a };
	void *bin[] = { b }, *bout[] = { da, db };

	ok(!RUN("add", p, in, out) && same(y, sum, 2), "add");
	ok(!RUN("add_bwd", p, bin, bout) && same(da, b, 2) && same(db, b, 2),
	   "add_bwd: dy to both");
	ok(!RUN("scale", p, sin_, out) && same(y, half, 2), "scale");
	ok(!RUN("scale_bwd", p, sin_, out) && same(y, half, 2),
	   "scale_bwd: alpha dy");
}

static void test_transpose(void)
{
	struct tp_transpose_params p = { .a = 1, .b = 2, .c = 3, .d = 1 };
	float x[] = { 0, 1, 2, 3, 4, 5 }, y[6], back[6];
	float want[] = { 0, 3, 1, 4, 2, 5 };
	void *in[] = { x }, *out[] = { y }, *bin[] = { y }, *bout[] = { back };

	ok(!RUN("transpose12", p, in, out) && same(y, want, 6),
	   "transpose12: [1,2,3,1] to [1,3,2,1]");
	ok(!RUN("transpose12_bwd", p, bin, bout) && same(back, x, 6),
	   "transpose12_bwd: the inverse");
}

static void test_optim(void)
{
	struct tp_sgd_params sp = { .count = 2, .lr = 0.5f, .momentum = 0.5f,
				    .weight_decay = 0.25f };
	struct tp_adam_params ap = { .count = 1, .lr = 0.1f, .beta1 = 0.9f,
				     .beta2 = 0.999f, .eps = 1e-8f,
				     .step = 1 };
	/* d = g + wd w = (1.5, -0.5); v = 0.5 v + d = (2.5, 0.5);
	 * w -= 0.5 v: (-0.25, 1.75) */
	float w[] = { 1, 2 }, g[] = { 1.25f, -1 }, vel[] = { 2, 2 };
	float want_w[] = { -0.25f, 1.75f }, want_v[] = { 2.5f, 0.5f };
	/* step 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25 */
	float aw[] = { 1 }, ag[] = { 0.5f }, mv[] = { 0, 0 };
	double want_aw[] = { 1 - 0.1 * 0.5 / (0.5 + 1e-8) };
	double want_mv[] = { 0.05, 0.00025 };
	void *min[] = { vel, g, w }, *mout[] = { vel };
	void *in[] = { w, vel }, *out[] = { w };
	void *amin[] = { mv, ag, aw }, *amout[] = { mv };
	void *ain[] = { aw, mv }, *aout[] = { aw };
	const char *names[] = { "sgd_momentum", "sgd", "adam_moments", "adam" };
	unsigned i, inplace = 0;

	for (i = 0; i < 4; i++) {
		const struct tp_op_type *t = tp_kernels_find(names[i]);

		inplace += t && (t->flags & TP_OP_INPLACE) &&
			   t->inplace_out == 0 && t->inplace_in == 0;
	}
	ok(inplace == 4, "optimizers: each declared in place, output 0 on input 0");
	ok(!RUN("sgd_momentum", sp, min, mout) && same(vel, want_v, 2) &&
	   !RUN("sgd", sp, in, out) && same(w, want_w, 2),
	   "sgd: momentum and weight decay, then the step, in place");
	ok(!RUN("adam_moments", ap, amin, amout) && near(mv, want_mv, 2) &&
	   !RUN("adam", ap, ain, aout) && near(aw, want_aw, 1),
	   "adam: moments, then the bias-corrected first step, in place");
	ap.step = 0;
	ok(RUN("adam", ap, ain, aout) == -EINVAL && near(aw, want_aw, 1),
	   "adam: step 0 is -EINVAL and writes nothing");
}

/*
 * synth_image: same-class images share a prototype (covariance 1 of 1.25
 * variance), other classes do not; the same draw gives the same bits, and
 * a label out of range fails with nothing written.
 */
static void test_synth(void)
{
	enum { PER = 8192 };
	struct tp_synth_params p = { .seed = 7, .draw = 11, .n = 3,
				     .per = PER, .classes = 2 };
	int32_t lab[3] = { 0, 1, 0 }, bad[3] = { 0, 2, 0 };
	static float x[3 * PER], again[3 * PER];
	void *in[] = { lab }, *bin[] = { bad }, *out[] = { x }, *out2[] = { again };
	double mean = 0, var = 0, same_c = 0, other_c = 0;
	size_t j;

	ok(!RUN("synth_image", p, in, out) && !RUN("synth_image", p, in, out2) &&
	   !memcmp(x, again, sizeof(x)), "synth_image: the same draw, the same bits");
	for (j = 0; j < PER; j++) {
		mean += x[j] / PER;
		var += (double)x[j] * x[j] / PER;
		same_c += (double)x[j] * x[2 * PER + j] / PER;
		other_c += (double)x[j] * x[PER + j] / PER;
	}
	ok(fabs(mean) < 0.05 && var > 1.15 && var < 1.35 && same_c > 0.9 &&
	   same_c < 1.1 && fabs(other_c) < 0.1,
	   "synth_image: mean %.3f, variance %.3f, same class %.3f, other %.3f",
	   mean, var, same_c, other_c);
	p.draw = 12;
	ok(!RUN("synth_image", p, in, out2) && memcmp(x, again, sizeof(x)),
	   "synth_image: another draw, other noise");
	memcpy(again, x, sizeof(x));
	ok(RUN("synth_image", p, bin, out) == -EINVAL &&
	   !memcmp(x, again, sizeof(x)),
	   "synth_image: a label out of range fails, nothing written");
}

static void test_registry(void)
{
	const struct tp_op_type *t = tp_kernels_find("conv2d");
	struct tp_conv2d_params small = {
		.n = 1, .c = 3, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3,
		.stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1,
	};
	struct tp_conv2d_params big = small;
	struct tp_eltwise_params ep = { .count = 4 };
	float x[4] = { 1, 2, 3, 4 }, y[4] = { 9, 9, 9, 9 };
	float keep[4] = { 9, 9, 9, 9 };
	size_t in_bytes[] = { 16 }, out_bytes[] = { 12 };
	void *in[] = { x }, *out[] = { y };
	struct tp_op_launch l = {
		.type = tp_kernels_find("relu"), .params = &ep,
		.params_len = sizeof(ep), .in = in, .in_bytes = in_bytes,
		.n_in = 1, .out = out, .out_bytes = out_bytes, .n_out = 1,
	};
	unsigned i, found = 0;

	for (i = 0; i < tp_kernels_count(); i++)
		found += tp_kernels_find(tp_kernels_at(i)->name) ==
			 tp_kernels_at(i);
	ok(tp_kernels_count() == 37 && found == 37 && !tp_kernels_at(37),
	   "registry: 37 ops, each found by its name");
	errno = 0;
	ok(!tp_kernels_find("conv3d") && errno == ENOENT,
	   "registry: unknown name is NULL with ENOENT");
	big.n = 32;
	big.k = 64;
	ok(t && t->cost_ns(&small, sizeof(small), NULL, 0) > 0 &&
	   t->cost_ns(&big, sizeof(big), NULL, 0) >
	   t->cost_ns(&small, sizeof(small), NULL, 0),
	   "cost: positive, grows with the work");
	ok(l.type->launch(&l) == -EINVAL && same(y, keep, 4),
	   "launch: an output smaller than the shape is -EINVAL");
	out_bytes[0] = 16;
	l.params_len = 4;
	ok(l.type->launch(&l) == -EINVAL && same(y, keep, 4),
	   "launch: a wrong params_len is -EINVAL");
	l.params_len = sizeof(ep);
	l.n_in = 2;
	ok(l.type->launch(&l) == -EINVAL && same(y, keep, 4),
	   "launch: a wrong number of inputs is -EINVAL");
	l.n_in = 1;
	ok(!l.type->launch(&l) && y[0] == 1 && y[3] == 4,
	   "launch: the corrected launch runs");
	small.stride_h = 0;
	ok(tp_kernels_shape(t, &small, sizeof(small), in_bytes, &i,
			    out_bytes, &found) == -EINVAL,
	   "shape: stride 0 is -EINVAL");
}

int main(void)
{
	plan_tests(55);
	test_linear();
	test_gemm();
	test_conv();
	test_workspace();
	test_norms();
	test_activations();
	test_pools();
	test_softmax_xent();
	test_embedding();
	test_eltwise();
	test_transpose();
	test_optim();
	test_synth();
	test_registry();
	return exit_status();
}
