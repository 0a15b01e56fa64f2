// SPDX-License-Identifier: MIT
/*
 * CPU layer-norm (Ba et al. 2016) over the last dimension with a
 * per-column gain and bias; biased variance, invstd saved per row. The
 * parameter gradients sum over rows in row order, in double.
 *
 * Rows are independent but for those sums: in parts, each part computes
 * its rows, and part 0 the parameter gradients over every row, in the
 * order a whole run sums them.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/kernel.h"

int tp_cpu_layernorm(const struct tp_op_launch *l)
{
	const struct tp_layernorm_params *p = TP_PARAMS(l, tp_layernorm_params);
	const float *gamma = TP_IN(l, 1), *beta = TP_IN(l, 2);
	float *mean = TP_OUT(l, 1), *invstd = TP_OUT(l, 2);
	size_t r, rows = tp_rows(l, p->rows);
	uint32_t j;

	for (r = 0; r < rows; r++) {
		const float *x = TP_IN(l, 0) + r * p->cols;
		float *y = TP_OUT(l, 0) + r * p->cols;
		double s = 0, v = 0, mu, is;

		for (j = 0; j < p->cols; j++)
			s += x[j];
		mu = s / p->cols;
		for (j = 0; j < p->cols; j++)
			v += (x[j] - mu) * (x[j] - mu);
		is = 1.0 / sqrt(v / p->cols + p->eps);
		for (j = 0; j < p->cols; j++)
			y[j] = (float)((x[j] - mu) * is * gamma[j] + beta[j]);
		mean[r] = (float)mu;
		invstd[r] = (float)is;
	}
	return 0;
}

/* dgamma = sum over rows of dy xhat, dbeta = sum of dy. */
static int ln_bwd_params(const struct tp_op_launch *l)
{
	const struct tp_layernorm_params *p = TP_PARAMS(l, tp_layernorm_params);
	const float *mean = TP_IN(l, 3), *invstd = TP_IN(l, 4);
	double *acc;
	uint32_t r, j;

	acc = calloc(2 * (size_t)p->cols, sizeof(*acc));
	if (!acc)
		return -ENOMEM;
	for (r = 0; r < p->rows; r++) {
		const float *dy = TP_IN(l, 0) + (size_t)r * p->cols;
		const float *x = TP_IN(l, 1) + (size_t)r * p->cols;
		double mu = mean[r], is = invstd[r];

		for (j = 0; j < p->cols; j++) {
			acc[j] += dy[j] * ((x[j] - mu) * is);
			acc[p->cols + j] += dy[j];
		}
	}
	for (j = 0; j < p->cols; j++) {
		TP_OUT(l, 1)[j] = (float)acc[j];
		TP_OUT(l, 2)[j] = (float)acc[p->cols + j];
	}
	free(acc);
	return 0;
}

int tp_cpu_layernorm_bwd(const struct tp_op_launch *l)
{
	const struct tp_layernorm_params *p = TP_PARAMS(l, tp_layernorm_params);
	const float *gamma = TP_IN(l, 2), *mean = TP_IN(l, 3);
	const float *invstd = TP_IN(l, 4);
	size_t r, rows = tp_rows(l, p->rows);
	double n = p->cols;
	uint32_t j;
	int rc;

	if (tp_writes_whole(l)) {
		rc = ln_bwd_params(l);
		if (rc)
			return rc;
	}
	for (r = 0; r < rows; r++) {
		const float *dy = TP_IN(l, 0) + r * p->cols;
		const float *x = TP_IN(l, 1) + r * p->cols;
		float *dx = TP_OUT(l, 0) + r * p->cols;
		double mu = mean[r], is = invstd[r], sg = 0, sgx = 0;

		for (j = 0; j < p->cols; j++) {
			double xh = (x[j] - mu) * is, g = (double)dy[j] * gamma[j];

			sg += g;
			sgx += g * xh;
		}
		/* dx = invstd / n (n g - sum g - xhat sum g xhat), g = dy gamma */
		for (j = 0; j < p->cols; j++) {
			double xh = (x[j] - mu) * is, g = (double)dy[j] * gamma[j];

			dx[j] = (float)(is / n * (n * g - sg - xh * sgx));
		}
	}
	return 0;
}
