// SPDX-License-Identifier: MIT
/*
 * The models' backward pass is right end to end: the gradient the tape
 * produces for each parameter (check_grads mode: same batch every step, no
 * update) equals the central finite difference of the model's loss,
 *
 *	|g_i - (L(p + h e_i) - L(p - h e_i)) / 2h| <= 2e-2 * max_k |numeric_k|
 *
 * with h = 1e-2 for the smooth BERT encoder (every parameter checked) and
 * h = 1e-3 for resnet-mini (ReLU kinks; 120 parameters spread over all its
 * tensors). This covers what the per-op checks cannot: gradients summed
 * where a tensor feeds several ops (residuals, Q/K/V), the head transposes
 * and the order of the tape.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "tests/tap.h"

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

	plan_tests(4);
	check("bert", &bert, 1e-2, 0);
	check("resnet-mini", &mini, 1e-3, 120);
	return exit_status();
}
