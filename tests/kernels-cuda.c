// SPDX-License-Identifier: MIT
/*
 * CPU and CUDA implementations of every op agree, and the CUDA ones are
 * deterministic.
 *
 * For each forward op, random inputs go through the CPU op and the CUDA
 * op; then the backward op gets the same inputs on both sides (upstream
 * gradient, forward inputs and the CPU forward's outputs), so that each op
 * is compared on its own. Every output element must satisfy
 *
 *	|cuda_i - cpu_i| <= 1e-4 * max(max_k |cpu_k|, 1)
 *
 * (accumulation orders differ: cuDNN and cuBLAS tile their sums; the
 * libraries' exp and erf differ in the last bits). Each CUDA op is run
 * twice and must give the same bits both times.
 *
 * Without a device (or a CUDA build) the whole test is skipped, saying
 * why; TPAGER_TEST_BACKEND=cuda turns that skip into a failure. The seed
 * is printed; TPAGER_TEST_SEED=N reproduces a run.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "kernels/ops.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

#define MAX_IO 8
#define TOL 1e-4

#ifdef TP_HAVE_CUDA
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	return tt_rand(&rng_state);
}

static float rng_normal(void)
{
	return tt_normal(&rng_state);
}

/*
 * @bwd_in lists the backward op's inputs: "dJ" a random upstream gradient
 * shaped like forward output J, "iJ" forward input J, "oJ" forward output J.
 * A NULL @bwd runs the forward op alone.
 */
struct agree_case {
	const char *what;
	const char *fwd, *bwd;
	const void *params;
	size_t params_len;
	int int_in;		/* index of the int32 input, or -1 */
	uint32_t int_max;
	const char *bwd_in;
	int abs_in;		/* input filled with |normal| (Adam's v), or -1 */
};

struct host_io {
	unsigned n_in, n_out;
	size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
	void *in[MAX_IO], *out[MAX_IO];
};

static int shape(const char *op, const struct agree_case *c,
		 struct host_io *h)
{
	const struct tp_op_type *t = tp_kernels_find(op);

	memset(h, 0, sizeof(*h));
	if (!t)
		return -ENOENT;
	return tp_kernels_shape(t, c->params, c->params_len, h->in_bytes,
				&h->n_in, h->out_bytes, &h->n_out);
}

static void free_host(struct host_io *h, bool inputs)
{
	unsigned i;

	for (i = 0; inputs && i < h->n_in; i++)
		free(h->in[i]);
	for (i = 0; i < h->n_out; i++)
		free(h->out[i]);
}

static int alloc_outputs(struct host_io *h)
{
	unsigned i;

	for (i = 0; i < h->n_out; i++)
		if (!(h->out[i] = calloc(1, h->out_bytes[i])))
			return -ENOMEM;
	return 0;
}

static struct tp_op_launch make_launch(const char *op,
				       const struct agree_case *c,
				       const struct host_io *h, void **in,
				       void **out, void *stream)
{
	return (struct tp_op_launch){
		.type = tp_kernels_find(op), .params = c->params,
		.params_len = c->params_len, .in = in,
		.in_bytes = h->in_bytes, .n_in = h->n_in, .out = out,
		.out_bytes = h->out_bytes, .n_out = h->n_out, .stream = stream,
	};
}

/*
 * Run @op on the device with @h's inputs, twice; compare with @h's CPU
 * outputs. Three test points: it ran, it agrees, it repeats bit for bit.
 */
static void agree(const char *op, const struct agree_case *c,
		  const struct host_io *h, cudaStream_t stream)
{
	void *din[MAX_IO] = { 0 }, *dout[MAX_IO] = { 0 };
	void *got[MAX_IO] = { 0 }, *again[MAX_IO] = { 0 };
	struct tp_op_launch l;
	double worst = 0;
	bool same = true, fine = true;
	unsigned i;
	size_t k;
	int rc = 0;

	for (i = 0; i < h->n_in && !rc; i++)
		rc = cudaMalloc(&din[i], h->in_bytes[i]) ||
		     cudaMemcpy(din[i], h->in[i], h->in_bytes[i],
				cudaMemcpyHostToDevice) ? -EIO : 0;
	for (i = 0; i < h->n_out && !rc; i++) {
		got[i] = malloc(h->out_bytes[i]);
		again[i] = malloc(h->out_bytes[i]);
		rc = !got[i] || !again[i] ||
		     cudaMalloc(&dout[i], h->out_bytes[i]) ? -ENOMEM : 0;
	}
	l = make_launch(op, c, h, din, dout, stream);
	for (int run = 0; run < 2 && !rc; run++) {
		rc = tp_kernels_launch_cuda(&l);
		if (!rc)
			rc = cudaStreamSynchronize(stream) ? -EIO : 0;
		for (i = 0; i < h->n_out && !rc; i++)
			rc = cudaMemcpy(run ? again[i] : got[i], dout[i],
					h->out_bytes[i],
					cudaMemcpyDeviceToHost) ? -EIO : 0;
	}
	if (!ok_rc(rc, "%s: %s runs on the device", c->what, op)) {
		skip(2, "%s failed", op);
		goto out;
	}
	for (i = 0; i < h->n_out; i++) {
		const float *cpu = h->out[i], *gpu = got[i];
		size_t n = h->out_bytes[i] / 4;
		double scale = 1;

		same &= !memcmp(got[i], again[i], h->out_bytes[i]);
		for (k = 0; k < n; k++)
			scale = fmax(scale, fabs(cpu[k]));
		for (k = 0; k < n; k++) {
			double err = fabs((double)gpu[k] - cpu[k]) / scale;

			if (!(err <= worst))
				worst = err;
			/* NaN fails too */
			if (!(err <= TOL) && fine) {
				diag("%s out%u[%zu]: cpu %.8g cuda %.8g", op,
				     i, k, cpu[k], gpu[k]);
				fine = false;
			}
		}
	}
	ok(fine, "%s: %s agrees with the CPU (worst %.2e)", c->what, op, worst);
	ok(same, "%s: %s gives the same bits twice", c->what, op);
out:
	for (i = 0; i < MAX_IO; i++) {
		cudaFree(din[i]);
		cudaFree(dout[i]);
		free(got[i]);
		free(again[i]);
	}
}

static int cpu_run(const char *op, const struct agree_case *c,
		   struct host_io *h)
{
	struct tp_op_launch l = make_launch(op, c, h, h->in, h->out, NULL);

	return tp_kernels_launch_cpu(&l);
}

static void check_case(const struct agree_case *c, cudaStream_t stream)
{
	struct host_io f, b;
	float *dy[MAX_IO] = { 0 };
	unsigned i, n = 0;
	size_t k;

	if (shape(c->fwd, c, &f) || alloc_outputs(&f)) {
		ok(0, "%s: set up", c->what);
		return;
	}
	for (i = 0; i < f.n_in; i++) {
		f.in[i] = malloc(f.in_bytes[i]);
		for (k = 0; f.in[i] && k < f.in_bytes[i] / 4; k++) {
			if ((int)i == c->int_in)
				((int32_t *)f.in[i])[k] =
					(int32_t)(rng_next() % c->int_max);
			else if ((int)i == c->abs_in)
				((float *)f.in[i])[k] = fabsf(rng_normal());
			else
				((float *)f.in[i])[k] = rng_normal();
		}
	}
	if (!ok_rc(cpu_run(c->fwd, c, &f), "%s: %s on the CPU", c->what,
		   c->fwd)) {
		skip(c->bwd ? 7 : 3, "no reference");
		goto out;
	}
	agree(c->fwd, c, &f, stream);
	if (!c->bwd)
		goto out;
	if (shape(c->bwd, c, &b) || alloc_outputs(&b)) {
		ok(0, "%s: set up backward", c->what);
		goto out;
	}
	for (k = 0; k < strlen(c->bwd_in); k += 3) {
		const char *tok = c->bwd_in + k;
		unsigned j = (unsigned)(tok[1] - '0');

		if (tok[0] == 'd') {
			size_t m = f.out_bytes[j] / 4, e;

			dy[j] = malloc(f.out_bytes[j]);
			for (e = 0; dy[j] && e < m; e++)
				dy[j][e] = rng_normal();
			b.in[n++] = dy[j];
		} else {
			b.in[n++] = tok[0] == 'i' ? f.in[j] : f.out[j];
		}
	}
	if (ok_rc(cpu_run(c->bwd, c, &b), "%s: %s on the CPU", c->what,
		  c->bwd))
		agree(c->bwd, c, &b, stream);
	else
		skip(3, "no reference");
	free_host(&b, false);
out:
	for (i = 0; i < MAX_IO; i++)
		free(dy[i]);
	free_host(&f, true);
}

#define P(x) &(x), sizeof(x)

static int run_all(void)
{
	const char *env = getenv("TPAGER_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261122;
	struct tp_linear_params lin = { .n = 33, .in = 70, .out = 19, .bias = 1 };
	/* rows dealt to every lane of the column sums, a partial column block */
	struct tp_linear_params lin_tall = { .n = 1000, .in = 24, .out = 45,
					     .bias = 1 };
	struct tp_gemm_params gm[4];
	struct tp_conv2d_params conv = {
		.n = 3, .c = 5, .h = 13, .w = 11, .k = 7, .r = 3, .s = 3,
		.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1,
	};
	/* the 1x1 stride-2 projection of a ResNet block, no bias */
	struct tp_conv2d_params proj = {
		.n = 2, .c = 8, .h = 14, .w = 14, .k = 16, .r = 1, .s = 1,
		.stride_h = 2, .stride_w = 2,
	};
	struct tp_batchnorm_params bn = { .n = 4, .c = 6, .hw = 49,
					  .eps = 1e-5f };
	struct tp_eltwise_params ew = { .count = 3001, .alpha = 0.3f };
	struct tp_pool_params mp = {
		.n = 2, .c = 3, .h = 15, .w = 15, .r = 3, .s = 3,
		.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
	};
	struct tp_gap_params gap = { .n = 4, .c = 9, .hw = 49 };
	struct tp_softmax_params sm = { .rows = 17, .cols = 300 };
	struct tp_layernorm_params ln = { .rows = 21, .cols = 768,
					  .eps = 1e-5f };
	struct tp_layernorm_params ln_tall = { .rows = 517, .cols = 40,
					       .eps = 1e-5f };
	struct tp_xent_params xe = { .n = 31, .classes = 1000 };
	struct tp_embedding_params emb = { .n = 300, .vocab = 50, .dim = 64 };
	/* spans of several rows of the table, a partial column block */
	struct tp_embedding_params emb_wide = { .n = 700, .vocab = 1000,
						.dim = 40 };
	struct tp_transpose_params tr = { .a = 3, .b = 17, .c = 12, .d = 64 };
	struct tp_sgd_params sgd = { .count = 4097, .lr = 0.1f,
				     .momentum = 0.9f, .weight_decay = 1e-4f };
	struct tp_adam_params adam = { .count = 4097, .lr = 1e-3f,
				       .beta1 = 0.9f, .beta2 = 0.999f,
				       .eps = 1e-8f, .weight_decay = 0,
				       .step = 3 };
	/* the CPU and the device draw the same bits (kernels/synth.h) */
	struct tp_synth_params syn = { .seed = 5, .draw = 77, .n = 9,
				       .per = 3 * 17 * 17, .classes = 10 };
	struct agree_case cases[40];
	unsigned n = 0, nb = 0, i;
	cudaStream_t stream;

	for (i = 0; i < 4; i++)
		gm[i] = (struct tp_gemm_params){
			.batch = 3, .m = 17, .n = 23, .k = 31,
			.trans_a = i & 1, .trans_b = i >> 1, .alpha = 0.5f,
		};
#define CASE(w, f, b, p, ii, im, bi) \
	cases[n++] = (struct agree_case){ w, f, b, P(p), ii, im, bi, -1 }
	CASE("linear", "linear", "linear_bwd", lin, -1, 0, "d0 i0 i1");
	CASE("linear 1000 rows", "linear", "linear_bwd", lin_tall, -1, 0,
	     "d0 i0 i1");
	for (i = 0; i < 4; i++)
		CASE("gemm", "gemm", "gemm_bwd", gm[i], -1, 0, "d0 i0 i1");
	CASE("conv2d", "conv2d", "conv2d_bwd", conv, -1, 0, "d0 i0 i1");
	CASE("conv2d 1x1/2", "conv2d", "conv2d_bwd", proj, -1, 0, "d0 i0 i1");
	CASE("batchnorm", "batchnorm", "batchnorm_bwd", bn, -1, 0,
	     "d0 i0 i1 o1 o2");
	CASE("relu", "relu", "relu_bwd", ew, -1, 0, "d0 i0");
	CASE("gelu", "gelu", "gelu_bwd", ew, -1, 0, "d0 i0");
	CASE("maxpool", "maxpool", "maxpool_bwd", mp, -1, 0, "d0 i0 o0");
	CASE("avgpool", "avgpool", "avgpool_bwd", mp, -1, 0, "d0");
	CASE("global_avgpool", "global_avgpool", "global_avgpool_bwd", gap,
	     -1, 0, "d0");
	CASE("softmax", "softmax", "softmax_bwd", sm, -1, 0, "d0 o0");
	CASE("layernorm", "layernorm", "layernorm_bwd", ln, -1, 0,
	     "d0 i0 i1 o1 o2");
	CASE("layernorm 517 rows", "layernorm", "layernorm_bwd", ln_tall, -1,
	     0, "d0 i0 i1 o1 o2");
	CASE("cross_entropy", "cross_entropy", "cross_entropy_bwd", xe, 1,
	     xe.classes, "d0 o1 i1");
	CASE("embedding", "embedding", "embedding_bwd", emb, 1, emb.vocab,
	     "d0 i1");
	CASE("embedding 1000 rows", "embedding", "embedding_bwd", emb_wide, 1,
	     emb_wide.vocab, "d0 i1");
	CASE("transpose12", "transpose12", "transpose12_bwd", tr, -1, 0, "d0");
	CASE("add", "add", "add_bwd", ew, -1, 0, "d0");
	CASE("scale", "scale", "scale_bwd", ew, -1, 0, "d0");
	CASE("synth_image", "synth_image", NULL, syn, 0, syn.classes, NULL);
	CASE("sgd", "sgd_momentum", NULL, sgd, -1, 0, NULL);
	CASE("sgd", "sgd", NULL, sgd, -1, 0, NULL);
	CASE("adam", "adam_moments", NULL, adam, -1, 0, NULL);
	CASE("adam", "adam", NULL, adam, -1, 0, NULL);
	cases[n - 1].abs_in = 1;	/* m and v: v must be >= 0 */
#undef CASE
	for (i = 0; i < n; i++)
		nb += cases[i].bwd != NULL;
	/* per op: CPU reference, device run, agreement, determinism */
	plan_tests(4 * (n + nb));
	diag("seed %llu (TPAGER_TEST_SEED reproduces)", (unsigned long long)seed);
	rng_state = seed;
	if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking))
		bail_out("cudaStreamCreate failed");
	for (i = 0; i < n; i++)
		check_case(&cases[i], stream);
	cudaStreamDestroy(stream);
	return exit_status();
}
#endif /* TP_HAVE_CUDA */

int main(void)
{
	const char *backend = getenv("TPAGER_TEST_BACKEND");
	bool forced = backend && !strcmp(backend, "cuda");
	int rc = tp_kernels_cuda_available();

	if (rc) {
		const char *why =
#ifdef TP_HAVE_CUDA
			"no usable CUDA device (driver or GPU absent)";
#else
			"built without the CUDA toolkit";
#endif
		if (!forced)
			plan_skip_all("%s", why);
		plan_tests(1);
		ok(0, "TPAGER_TEST_BACKEND=cuda: %s", why);
		return exit_status();
	}
#ifdef TP_HAVE_CUDA
	return run_all();
#else
	return exit_status();
#endif
}
