// SPDX-License-Identifier: MIT
/*
 * CPU batch-norm in training mode (Ioffe & Szegedy, Algorithm 1): the
 * statistics of each channel over the batch and the spatial positions,
 * biased variance, invstd = 1/sqrt(var + eps) saved for the backward op.
 * Sums run in double in a fixed order.
 */
#include "config.h"

#include <math.h>
#include <errno.h>
#include <stdlib.h>

#include "kernels/kernel.h"

int tp_cpu_batchnorm(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *x = TP_IN(l, 0), *gamma = TP_IN(l, 1), *beta = TP_IN(l, 2);
	float *y = TP_OUT(l, 0), *mean = TP_OUT(l, 1), *invstd = TP_OUT(l, 2);
	double m = (double)p->n * p->hw;
	uint32_t c, i;
	size_t j;

	for (c = 0; c < p->c; c++) {
		double s = 0, v = 0, mu, is;

		for (i = 0; i < p->n; i++) {
			const float *xc = x + ((size_t)i * p->c + c) * p->hw;

			for (j = 0; j < p->hw; j++)
				s += xc[j];
		}
		mu = s / m;
		for (i = 0; i < p->n; i++) {
			const float *xc = x + ((size_t)i * p->c + c) * p->hw;

			for (j = 0; j < p->hw; j++)
				v += (xc[j] - mu) * (xc[j] - mu);
		}
		is = 1.0 / sqrt(v / m + p->eps);
		for (i = 0; i < p->n; i++) {
			size_t off = ((size_t)i * p->c + c) * p->hw;

			for (j = 0; j < p->hw; j++)
				y[off + j] = (float)((x[off + j] - mu) * is *
						     gamma[c] + beta[c]);
		}
		mean[c] = (float)mu;
		invstd[c] = (float)is;
	}
	return 0;
}

int tp_cpu_batchnorm_bwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *gamma = TP_IN(l, 2);
	const float *mean = TP_IN(l, 3), *invstd = TP_IN(l, 4);
	float *dx = TP_OUT(l, 0), *dgamma = TP_OUT(l, 1), *dbeta = TP_OUT(l, 2);
	double m = (double)p->n * p->hw;
	uint32_t c, i;
	size_t j;

	for (c = 0; c < p->c; c++) {
		double sdy = 0, sdyx = 0, mu = mean[c], is = invstd[c], k;

		for (i = 0; i < p->n; i++) {
			size_t off = ((size_t)i * p->c + c) * p->hw;

			for (j = 0; j < p->hw; j++) {
				sdy += dy[off + j];
				sdyx += dy[off + j] * (x[off + j] - mu) * is;
			}
		}
		/* dx = gamma invstd / m (m dy - sum dy - xhat sum dy xhat) */
		k = gamma[c] * is / m;
		for (i = 0; i < p->n; i++) {
			size_t off = ((size_t)i * p->c + c) * p->hw;

			for (j = 0; j < p->hw; j++) {
				double xh = (x[off + j] - mu) * is;

				dx[off + j] = (float)(k * (m * dy[off + j] -
							   sdy - xh * sdyx));
			}
		}
		dgamma[c] = (float)sdyx;
		dbeta[c] = (float)sdy;
	}
	return 0;
}
