// SPDX-License-Identifier: MIT
/*
 * Gradient checks of every differentiable op's CPU backward against central
 * finite differences of its CPU forward.
 *
 * For an op f with differentiated outputs y_j, take L = sum_j w_j . y_j with
 * random weights w_j; the backward op fed dy_j = w_j must give dL/dx for
 * each float input x. Numerically, dL/dx_i = (L(x + h e_i) - L(x - h e_i))
 * / 2h with h = 1e-2, L accumulated in double from the float outputs.
 * Every element of every input is checked, with the tolerance
 *
 *	|analytic_i - numeric_i| <= 1e-2 * max(max_k |numeric_k|, 1e-3)
 *
 * (1% of the largest gradient of that tensor). Inputs of the piecewise
 * ops (ReLU, max-pool) are distinct values 0.05 apart and away from 0, so
 * that no perturbation crosses a kink. Each backward op is also run twice
 * and must give the same bits.
 *
 * The seed is printed; TPAGER_TEST_SEED=N reproduces a run.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

#define MAX_IO 8
#define GC_H 1e-2
#define GC_TOL 1e-2

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	return tt_rand(&rng_state);
}

static double rng_uniform(void)
{
	return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static float rng_normal(void)
{
	double u = rng_uniform() + 1e-12, v = rng_uniform();

	return (float)(sqrt(-2.0 * log(u)) * cos(2 * M_PI * v));
}

/*
 * One check. @bwd_in lists the backward op's inputs: "dJ" the upstream
 * gradient of forward output J, "iJ" forward input J, "oJ" forward output J.
 * @bwd_out lists, per backward output, the forward input it is the
 * gradient of.
 */
struct gc_case {
	const char *what;
	const char *fwd, *bwd;
	const void *params;
	size_t params_len;
	int int_in;		/* index of the int32 input, or -1 */
	uint32_t int_max;	/* its values are in [0, int_max) */
	int distinct_in;	/* input filled with distinct values, or -1 */
	unsigned n_dy;		/* outputs 0..n_dy-1 are differentiated */
	const char *bwd_in;
	const char *bwd_out;
	float dy_scale;		/* 0: random normal upstream gradient */
};

struct bufs {
	unsigned n_in, n_out;
	size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
	void *in[MAX_IO], *out[MAX_IO];
};

static int launch(const struct tp_op_type *t, const void *params,
		  size_t params_len, void *const *in, const size_t *in_bytes,
		  unsigned n_in, void *const *out, const size_t *out_bytes,
		  unsigned n_out)
{
	struct tp_op_launch l = {
		.type = t, .params = params, .params_len = params_len,
		.in = in, .in_bytes = in_bytes, .n_in = n_in,
		.out = out, .out_bytes = out_bytes, .n_out = n_out,
	};

	return t->launch(&l);
}

static int alloc_bufs(const struct tp_op_type *t, const struct gc_case *c,
		      struct bufs *b)
{
	unsigned i;
	int rc;

	memset(b, 0, sizeof(*b));
	rc = tp_kernels_shape(t, c->params, c->params_len, b->in_bytes,
			      &b->n_in, b->out_bytes, &b->n_out);
	if (rc)
		return rc;
	for (i = 0; i < b->n_in; i++)
		if (!(b->in[i] = calloc(1, b->in_bytes[i])))
			return -ENOMEM;
	for (i = 0; i < b->n_out; i++)
		if (!(b->out[i] = calloc(1, b->out_bytes[i])))
			return -ENOMEM;
	return 0;
}

static void free_bufs(struct bufs *b)
{
	unsigned i;

	for (i = 0; i < b->n_in; i++)
		free(b->in[i]);
	for (i = 0; i < b->n_out; i++)
		free(b->out[i]);
}

static void fill_distinct(float *x, size_t n)
{
	size_t i, j;

	/* (k + 0.5) * 0.05 centred on 0: never 0, 0.05 apart, shuffled */
	for (i = 0; i < n; i++)
		x[i] = (float)(((double)i - (double)(n / 2) + 0.5) * 0.05);
	for (i = n - 1; i > 0; i--) {
		float tmp;

		j = rng_next() % (i + 1);
		tmp = x[i];
		x[i] = x[j];
		x[j] = tmp;
	}
}

static double objective(const struct tp_op_type *t, const struct gc_case *c,
			struct bufs *f, float *const *w, int *rc)
{
	double L = 0;
	unsigned j;
	size_t i;

	*rc = launch(t, c->params, c->params_len, f->in, f->in_bytes, f->n_in,
		     f->out, f->out_bytes, f->n_out);
	for (j = 0; j < c->n_dy; j++) {
		const float *y = f->out[j];

		for (i = 0; i < f->out_bytes[j] / 4; i++)
			L += (double)w[j][i] * y[i];
	}
	return L;
}

static void *pick(const char *tok, struct bufs *f, float *const *w)
{
	unsigned j = (unsigned)(tok[1] - '0');

	switch (tok[0]) {
	case 'd':
		return w[j];
	case 'i':
		return f->in[j];
	default:
		return f->out[j];
	}
}

static size_t pick_bytes(const char *tok, const struct bufs *f)
{
	unsigned j = (unsigned)(tok[1] - '0');

	return tok[0] == 'i' ? f->in_bytes[j] : f->out_bytes[j];
}

static void check_case(const struct gc_case *c)
{
	const struct tp_op_type *tf = tp_kernels_find(c->fwd);
	const struct tp_op_type *tb = tp_kernels_find(c->bwd);
	struct bufs f, b;
	float *w[MAX_IO] = { 0 };
	void *bin[MAX_IO], *bout2[MAX_IO];
	size_t bin_bytes[MAX_IO];
	unsigned n_bin = 0, j, k;
	double worst = 0;
	int rc, fails = 0, same = 1;
	size_t i;

	if (!tf || !tb || alloc_bufs(tf, c, &f) || alloc_bufs(tb, c, &b)) {
		ok(0, "%s: set up %s/%s", c->what, c->fwd, c->bwd);
		return;
	}
	for (j = 0; j < f.n_in; j++) {
		float *x = f.in[j];
		int32_t *xi = f.in[j];
		size_t n = f.in_bytes[j] / 4;

		for (i = 0; i < n; i++) {
			if ((int)j == c->int_in)
				xi[i] = (int32_t)(rng_next() % c->int_max);
			else
				x[i] = rng_normal();
		}
		if ((int)j == c->distinct_in)
			fill_distinct(x, n);
	}
	for (j = 0; j < c->n_dy; j++) {
		w[j] = malloc(f.out_bytes[j]);
		for (i = 0; w[j] && i < f.out_bytes[j] / 4; i++)
			w[j][i] = c->dy_scale ? c->dy_scale : rng_normal();
	}

	/* analytic: the backward op at the unperturbed point */
	objective(tf, c, &f, w, &rc);
	for (k = 0; k < strlen(c->bwd_in); k += 3) {
		bin[n_bin] = pick(c->bwd_in + k, &f, w);
		bin_bytes[n_bin++] = c->bwd_in[k] == 'd' ?
			f.out_bytes[c->bwd_in[k + 1] - '0'] :
			pick_bytes(c->bwd_in + k, &f);
	}
	rc = rc ? rc : launch(tb, c->params, c->params_len, bin, bin_bytes,
			      n_bin, b.out, b.out_bytes, b.n_out);
	if (!ok_rc(rc, "%s: forward and backward run", c->what))
		goto out;
	/* the same launch again gives the same bits */
	for (k = 0; k < b.n_out; k++)
		bout2[k] = malloc(b.out_bytes[k]);
	rc = launch(tb, c->params, c->params_len, bin, bin_bytes, n_bin,
		    bout2, b.out_bytes, b.n_out);
	for (k = 0; k < b.n_out; k++) {
		same &= !rc && !memcmp(bout2[k], b.out[k], b.out_bytes[k]);
		free(bout2[k]);
	}
	ok(same, "%s: backward is deterministic", c->what);

	for (k = 0; k < b.n_out; k++) {
		unsigned fi = (unsigned)(c->bwd_out[2 * k] - '0');
		float *x = f.in[fi];
		const float *ana = b.out[k];
		size_t n = f.in_bytes[fi] / 4;
		double *num = malloc(n * sizeof(*num)), scale = 1e-3;

		for (i = 0; num && i < n; i++) {
			float x0 = x[i];
			double lp, lm;

			x[i] = (float)(x0 + GC_H);
			lp = objective(tf, c, &f, w, &rc);
			x[i] = (float)(x0 - GC_H);
			lm = objective(tf, c, &f, w, &rc);
			x[i] = x0;
			/* the step actually taken, after rounding to float */
			num[i] = (lp - lm) / ((double)(float)(x0 + GC_H) -
					      (double)(float)(x0 - GC_H));
			if (fabs(num[i]) > scale)
				scale = fabs(num[i]);
		}
		for (i = 0; num && i < n; i++) {
			double err = fabs(ana[i] - num[i]) / scale;

			if (err > worst)
				worst = err;
			if (err > GC_TOL && fails++ < 3)
				diag("%s: d/d in%u[%zu]: analytic %.6g numeric %.6g",
				     c->what, fi, i, ana[i], num[i]);
		}
		free(num);
	}
	ok(!fails, "%s: gradients within %.0e (worst %.2e)", c->what, GC_TOL,
	   worst);
out:
	for (j = 0; j < c->n_dy; j++)
		free(w[j]);
	free_bufs(&f);
	free_bufs(&b);
}

#define P(x) &(x), sizeof(x)

int main(void)
{
	const char *env = getenv("TPAGER_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261122;
	struct tp_linear_params lin = { .n = 3, .in = 5, .out = 4, .bias = 1 };
	struct tp_linear_params lin_nb = { .n = 2, .in = 3, .out = 2 };
	struct tp_gemm_params gm[4];
	struct tp_conv2d_params conv = {
		.n = 2, .c = 2, .h = 5, .w = 4, .k = 3, .r = 3, .s = 2,
		.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1,
	};
	struct tp_conv2d_params conv1 = {
		.n = 1, .c = 3, .h = 3, .w = 3, .k = 2, .r = 1, .s = 1,
		.stride_h = 1, .stride_w = 1,
	};
	struct tp_batchnorm_params bn = { .n = 3, .c = 2, .hw = 4, .eps = 1e-5f };
	struct tp_eltwise_params ew = { .count = 17 };
	struct tp_eltwise_params sc = { .count = 9, .alpha = -1.75f };
	struct tp_pool_params mp = {
		.n = 2, .c = 2, .h = 5, .w = 5, .r = 3, .s = 3,
		.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
	};
	struct tp_pool_params ap = {
		.n = 1, .c = 2, .h = 4, .w = 6, .r = 2, .s = 3,
		.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0,
	};
	struct tp_gap_params gap = { .n = 2, .c = 3, .hw = 5 };
	struct tp_softmax_params sm = { .rows = 3, .cols = 6 };
	struct tp_layernorm_params ln = { .rows = 4, .cols = 7, .eps = 1e-5f };
	struct tp_xent_params xe = { .n = 5, .classes = 4 };
	struct tp_embedding_params emb = { .n = 7, .vocab = 4, .dim = 3 };
	struct tp_transpose_params tr = { .a = 2, .b = 3, .c = 4, .d = 2 };
	struct gc_case cases[32];
	unsigned n = 0, i;

	for (i = 0; i < 4; i++)
		gm[i] = (struct tp_gemm_params){
			.batch = 2, .m = 3, .n = 4, .k = 5,
			.trans_a = i & 1, .trans_b = i >> 1, .alpha = 1.5f,
		};

#define CASE(w, f, b, p, ii, im, di, ndy, bi, bo) \
	cases[n++] = (struct gc_case){ w, f, b, P(p), ii, im, di, ndy, bi, bo, 0 }
	CASE("linear", "linear", "linear_bwd", lin, -1, 0, -1, 1,
	     "d0 i0 i1", "0 1 2");
	CASE("linear, no bias", "linear", "linear_bwd", lin_nb, -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("gemm NN x2", "gemm", "gemm_bwd", gm[0], -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("gemm TN x2", "gemm", "gemm_bwd", gm[1], -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("gemm NT x2", "gemm", "gemm_bwd", gm[2], -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("gemm TT x2", "gemm", "gemm_bwd", gm[3], -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("conv2d 3x2 stride 2,1 pad 1", "conv2d", "conv2d_bwd", conv,
	     -1, 0, -1, 1, "d0 i0 i1", "0 1 2");
	CASE("conv2d 1x1", "conv2d", "conv2d_bwd", conv1, -1, 0, -1, 1,
	     "d0 i0 i1", "0 1");
	CASE("batchnorm", "batchnorm", "batchnorm_bwd", bn, -1, 0, -1, 1,
	     "d0 i0 i1 o1 o2", "0 1 2");
	CASE("relu", "relu", "relu_bwd", ew, -1, 0, 0, 1, "d0 i0", "0");
	CASE("gelu", "gelu", "gelu_bwd", ew, -1, 0, -1, 1, "d0 i0", "0");
	CASE("maxpool 3x3/2 pad 1", "maxpool", "maxpool_bwd", mp, -1, 0, 0, 1,
	     "d0 i0 o0", "0");
	CASE("avgpool 2x3 stride 2,1 pad 1,0", "avgpool", "avgpool_bwd", ap,
	     -1, 0, -1, 1, "d0", "0");
	CASE("global_avgpool", "global_avgpool", "global_avgpool_bwd", gap,
	     -1, 0, -1, 1, "d0", "0");
	CASE("softmax", "softmax", "softmax_bwd", sm, -1, 0, -1, 1, "d0 o0",
	     "0");
	CASE("layernorm", "layernorm", "layernorm_bwd", ln, -1, 0, -1, 1,
	     "d0 i0 i1 o1 o2", "0 1 2");
	CASE("cross_entropy", "cross_entropy", "cross_entropy_bwd", xe, 1,
	     xe.classes, -1, 1, "d0 o1 i1", "0");
	CASE("embedding", "embedding", "embedding_bwd", emb, 1, emb.vocab, -1,
	     1, "d0 i1", "0");
	CASE("transpose12", "transpose12", "transpose12_bwd", tr, -1, 0, -1, 1,
	     "d0", "0");
	CASE("add", "add", "add_bwd", ew, -1, 0, -1, 1, "d0", "0 1");
	CASE("scale", "scale", "scale_bwd", sc, -1, 0, -1, 1, "d0", "0");
#undef CASE

	plan_tests(3 * n);
	diag("seed %llu (TPAGER_TEST_SEED reproduces)", (unsigned long long)seed);
	rng_state = seed;
	for (i = 0; i < n; i++)
		check_case(&cases[i]);
	return exit_status();
}
