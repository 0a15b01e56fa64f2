// SPDX-License-Identifier: MIT
/*
 * CPU batch-norm in training mode (Ioffe & Szegedy, Algorithm 1): the
 * statistics of each channel over the batch and the spatial positions,
 * biased variance, invstd = 1/sqrt(var + eps) saved for the backward op.
 * Sums run in double in a fixed order.
 *
 * Each op is two passes: the per-channel sums over the whole batch, which
 * part 0 of a split run writes (mean and invstd; dgamma and dbeta), then
 * the per-element outputs of the part's rows, computed from those float
 * outputs as stored. A whole run takes the same two passes, so later
 * parts, which see only their rows, give the same bits.
 */
#include "config.h"

#include <math.h>

#include "kernels/kernel.h"

/* Channel @c of image @i in a [n, c, hw] tensor. */
#define BN_AT(p, t, i, c) ((t) + ((size_t)(i) * (p)->c + (c)) * (p)->hw)

static void bn_stats(const struct tp_batchnorm_params *p, const float *x,
		     float *mean, float *invstd)
{
	double m = (double)p->n * p->hw;
	uint32_t c, i;
	size_t j;

	for (c = 0; c < p->c; c++) {
		double s = 0, v = 0, mu;

		for (i = 0; i < p->n; i++)
			for (j = 0; j < p->hw; j++)
				s += BN_AT(p, x, i, c)[j];
		mu = s / m;
		for (i = 0; i < p->n; i++)
			for (j = 0; j < p->hw; j++) {
				double d = BN_AT(p, x, i, c)[j] - mu;

				v += d * d;
			}
		mean[c] = (float)mu;
		invstd[c] = (float)(1.0 / sqrt(v / m + p->eps));
	}
}

int tp_cpu_batchnorm(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *x = TP_IN(l, 0), *gamma = TP_IN(l, 1), *beta = TP_IN(l, 2);
	float *y = TP_OUT(l, 0), *mean = TP_OUT(l, 1), *invstd = TP_OUT(l, 2);
	size_t i, n = tp_rows(l, p->n), j;
	uint32_t c;

	if (tp_writes_whole(l))
		bn_stats(p, x, mean, invstd);
	for (i = 0; i < n; i++)
		for (c = 0; c < p->c; c++) {
			const float *xc = BN_AT(p, x, i, c);
			float *yc = BN_AT(p, y, i, c);
			double mu = mean[c], is = invstd[c];

			for (j = 0; j < p->hw; j++)
				yc[j] = (float)((xc[j] - mu) * is * gamma[c] +
						beta[c]);
		}
	return 0;
}

/* dbeta = sum dy, dgamma = sum dy xhat, per channel over the batch. */
static void bn_bwd_sums(const struct tp_batchnorm_params *p, const float *dy,
			const float *x, const float *mean,
			const float *invstd, float *dgamma, float *dbeta)
{
	uint32_t c, i;
	size_t j;

	for (c = 0; c < p->c; c++) {
		double sdy = 0, sdyx = 0, mu = mean[c], is = invstd[c];

		for (i = 0; i < p->n; i++) {
			const float *dyc = BN_AT(p, dy, i, c);
			const float *xc = BN_AT(p, x, i, c);

			for (j = 0; j < p->hw; j++) {
				sdy += dyc[j];
				sdyx += dyc[j] * (xc[j] - mu) * is;
			}
		}
		dgamma[c] = (float)sdyx;
		dbeta[c] = (float)sdy;
	}
}

int tp_cpu_batchnorm_bwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *gamma = TP_IN(l, 2);
	const float *mean = TP_IN(l, 3), *invstd = TP_IN(l, 4);
	float *dx = TP_OUT(l, 0), *dgamma = TP_OUT(l, 1), *dbeta = TP_OUT(l, 2);
	double m = (double)p->n * p->hw;
	size_t i, n = tp_rows(l, p->n), j;
	uint32_t c;

	if (tp_writes_whole(l))
		bn_bwd_sums(p, dy, x, mean, invstd, dgamma, dbeta);
	/* dx = gamma invstd / m (m dy - sum dy - xhat sum dy xhat) */
	for (i = 0; i < n; i++)
		for (c = 0; c < p->c; c++) {
			const float *dyc = BN_AT(p, dy, i, c);
			const float *xc = BN_AT(p, x, i, c);
			float *dxc = BN_AT(p, dx, i, c);
			double mu = mean[c], is = invstd[c];
			double k = gamma[c] * is / m;
			double sdy = dbeta[c], sdyx = dgamma[c];

			for (j = 0; j < p->hw; j++) {
				double xh = (xc[j] - mu) * is;

				dxc[j] = (float)(k * (m * dyc[j] - sdy -
						      xh * sdyx));
			}
		}
	return 0;
}
