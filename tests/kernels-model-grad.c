// SPDX-License-Identifier: MIT
/*
 * The models' backward pass is right end to end: the gradient the tape
 * produces for each parameter (check_grads mode: same batch every step, no
 * update) equals the central finite difference of the model's loss,
 *
 *	|g_i - (L(p + h e_i) - L(p - h e_i)) / 2h| <= 2e-2 * max_k |numeric_k|
 *
 * with h = 1e-3 for the smooth BERT encoder (every parameter checked; its
 * weights start N(0, 0.02^2), so a step of 1e-2 is half of one) and
 * h = 1e-3 for resnet-mini (ReLU kinks; 120 parameters spread over all its
 * tensors). This covers what the per-op checks cannot: gradients summed
 * where a tensor feeds several ops (residuals, Q/K/V), the head transposes
 * and the order of the tape.
 *
 * VGG-16 and ResNet-18 are too large for one difference per parameter:
 * for them the flat parameter vector is cut into four ranges (the first
 * 1/64, up to 1/16, up to 1/4, the rest: early, middle and late layers),
 * and along each range's gradient g_R the model's loss must change at the
 * rate |g_R|,
 *
 *	|(L(p + h u) - L(p - h u)) / 2h - |g_R|| <= 2e-2 |g_R|,  u = g_R/|g_R|
 *
 * with h = 1e-4, after every parameter that starts at 0 (biases, betas,
 * the zero gammas of the residual branches) was set to N(0, 0.2^2) so
 * that no branch's gradient is zero (ResNet-18 at batch 4 and 64x64, VGG-16
 * at batch 2 and 32x32). This covers the shapes the small models lack: the
 * 7x7 stride-2 stem and its max-pool, 1x1 projections, batch-norm over 16
 * values (a 2x2 map), 2x2 max-pools and a linear over a flattened map. A
 * max-pool backward that sent each gradient to its window's corner fails
 * it in both models.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

#define TOL 2e-2

static void check(const char *what, struct tp_model_opts *mo, double h,
		  size_t samples)
{
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=host,"
					   "vmm.chunk_size=16K");
	struct tp_model *m = ctx ? tp_model_create(ctx, mo) : NULL;
	float *p = NULL, *g = NULL, loss = 0, lp, lm;
	double *num = NULL, scale = 1e-3, worst = 0;
	size_t n = 0, k, i, stride = 1, bad = 0;
	int rc;

	rc = m ? tp_model_step(m, &loss) : -errno;
	if (!rc) {
		n = tp_model_param_bytes(m) / 4;
		p = malloc(n * 4);
		g = malloc(n * 4);
		num = calloc(n, sizeof(*num));
		rc = !p || !g || !num ? -ENOMEM :
		     tp_model_read_params(m, p, n * 4);
	}
	if (!rc)
		rc = tp_model_read_grads(m, g, n * 4);
	if (!ok_rc(rc, "%s: a step with gradients kept", what)) {
		skip(1, "no gradients");
		goto out;
	}
	if (samples && samples < n)
		stride = n / samples;
	for (i = 0; i < n && !rc; i += stride) {
		float p0 = p[i];

		p[i] = (float)(p0 + h);
		rc = tp_model_write_params(m, p, n * 4);
		rc = rc ? rc : tp_model_step(m, &lp);
		p[i] = (float)(p0 - h);
		rc = rc ? rc : tp_model_write_params(m, p, n * 4);
		rc = rc ? rc : tp_model_step(m, &lm);
		p[i] = p0;
		num[i] = ((double)lp - lm) / ((double)(float)(p0 + h) -
					      (double)(float)(p0 - h));
		scale = fmax(scale, fabs(num[i]));
	}
	rc = rc ? rc : tp_model_write_params(m, p, n * 4);
	for (i = 0, k = 0; i < n && !rc; i += stride, k++) {
		double err = fabs(g[i] - num[i]) / scale;

		worst = fmax(worst, err);
		if (err > TOL && bad++ < 3)
			diag("%s: parameter %zu: tape %.6g, numeric %.6g", what,
			     i, g[i], num[i]);
	}
	ok(!rc && !bad, "%s: %zu of %zu gradients match within %.0e "
	   "(worst %.2e, largest %.3g)", what, k, n, TOL, worst, scale);
out:
	free(p);
	free(g);
	free(num);
	tp_model_destroy(m);
	if (ctx)
		tp_ctx_destroy(ctx);
}

/* Along each range's gradient; see the header. */
static void check_dir(const char *what, struct tp_model_opts *mo, double h)
{
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=host,"
					   "vmm.chunk_size=64K");
	struct tp_model *m = ctx ? tp_model_create(ctx, mo) : NULL;
	float *p = NULL, *g = NULL, *q = NULL, loss = 0, lp, lm;
	uint64_t rng = mo->seed * 31 + 7;
	size_t n = 0, i, r, cut[5];
	int rc;

	rc = m ? tp_model_step(m, &loss) : -errno;
	if (!rc) {
		n = tp_model_param_bytes(m) / 4;
		p = malloc(n * 4);
		g = malloc(n * 4);
		q = malloc(n * 4);
		rc = !p || !g || !q ? -ENOMEM :
		     tp_model_read_params(m, p, n * 4);
	}
	for (i = 0; !rc && i < n; i++)
		if (p[i] == 0.0f)
			p[i] = 0.2f * tt_normal(&rng);
	rc = rc ? rc : tp_model_write_params(m, p, n * 4);
	rc = rc ? rc : tp_model_step(m, &loss);
	rc = rc ? rc : tp_model_read_grads(m, g, n * 4);
	if (!ok_rc(rc, "%s: a step with gradients kept", what)) {
		skip(4, "no gradients");
		goto out;
	}
	cut[0] = 0;
	cut[1] = n / 64;
	cut[2] = n / 16;
	cut[3] = n / 4;
	cut[4] = n;
	for (r = 0; r < 4; r++) {
		double gg = 0, num, norm;

		for (i = cut[r]; i < cut[r + 1]; i++)
			gg += (double)g[i] * g[i];
		norm = sqrt(gg);
		memcpy(q, p, n * 4);
		for (i = cut[r]; norm > 0 && i < cut[r + 1]; i++)
			q[i] = (float)(p[i] + h * g[i] / norm);
		rc = tp_model_write_params(m, q, n * 4);
		rc = rc ? rc : tp_model_step(m, &lp);
		for (i = cut[r]; norm > 0 && i < cut[r + 1]; i++)
			q[i] = (float)(p[i] - h * g[i] / norm);
		rc = rc ? rc : tp_model_write_params(m, q, n * 4);
		rc = rc ? rc : tp_model_step(m, &lm);
		num = ((double)lp - lm) / (2 * h);
		ok(!rc && norm > 0 && fabs(num - norm) <= TOL * norm,
		   "%s: parameters %zu-%zu: the loss changes at %.5g along "
		   "their gradient of norm %.5g", what, cut[r], cut[r + 1],
		   num, norm);
	}
out:
	free(p);
	free(g);
	free(q);
	tp_model_destroy(m);
	if (ctx)
		tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_model_opts bert = {
		.name = "bert", .layers = 1, .hidden = 8, .heads = 2,
		.seq = 4, .vocab = 6, .classes = 3, .batch = 2, .seed = 5,
		.check_grads = 1,
	};
	struct tp_model_opts mini = {
		.name = "resnet-mini", .batch = 2, .image = 8, .classes = 3,
		.seed = 6, .check_grads = 1,
	};

	struct tp_model_opts r18 = {
		.name = "resnet", .depth = 18, .batch = 4, .image = 64,
		.classes = 3, .seed = 7, .check_grads = 1,
	};
	struct tp_model_opts vgg = {
		.name = "vgg16", .batch = 2, .image = 32, .classes = 3,
		.seed = 8, .check_grads = 1,
	};

	plan_tests(4 + 2 * 5);
	check("bert", &bert, 1e-3, 0);
	check("resnet-mini", &mini, 1e-3, 120);
	check_dir("resnet-18", &r18, 1e-4);
	check_dir("vgg16", &vgg, 1e-4);
	return exit_status();
}
