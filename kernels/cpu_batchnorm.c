// SPDX-License-Identifier: MIT
/*
 * CPU batch-norm in training mode (Ioffe & Szegedy, Algorithm 1): the
 * statistics of each channel over the batch and the spatial positions,
 * biased variance, invstd = 1/sqrt(var + eps) saved for the backward op.
 *
 * The forward op makes three passes over the rows: the sum of each
 * channel (kept in mean), the sum of its squared deviations from the mean
 * (kept in invstd), then the outputs. The backward op makes two: dbeta =
 * sum dy and dgamma = sum dy xhat, then dx. Each image's sum is taken in
 * double and added to the channel's float in image order, so a sum is the
 * same whatever rows a launch has. A whole run makes the passes over every
 * row; part 0 of a split run makes the sums over every row, then its rows'
 * outputs, and later parts their outputs; parts that sum (l->sums) make
 * each pass in parts, part 0 of a pass starting its sums and the last
 * part making them the statistic (the mean, invstd). The per-element
 * outputs depend on nothing but the element and its channel's float
 * statistics.
 */
#include "config.h"

#include <math.h>

#include "kernels/kernel.h"

/* Channel @c of image @i in a [n, c, hw] tensor. */
#define BN_AT(p, t, i, c) ((t) + ((size_t)(i) * (p)->c + (c)) * (p)->hw)

/* The forward op's passes over the rows (the registry says 3). */
enum { BN_SUM, BN_DEVIATION, BN_OUTPUT };

/* The elements a channel's statistics are over. */
static double bn_count(const struct tp_batchnorm_params *p)
{
	return (double)p->n * p->hw;
}

/*
 * Add images [0, @n) of @x to each channel's @acc: the sum of their
 * elements, or of their squared deviations from @mean.
 */
static void bn_add_images(const struct tp_batchnorm_params *p,
			  const float *x, size_t n, const float *mean,
			  float *acc)
{
	for (uint32_t c = 0; c < p->c; c++)
		for (size_t i = 0; i < n; i++) {
			const float *xc = BN_AT(p, x, i, c);
			double s = 0, mu = mean ? mean[c] : 0;

			for (size_t j = 0; j < p->hw; j++) {
				double d = xc[j] - mu;

				s += mean ? d * d : xc[j];
			}
			acc[c] = (float)((double)acc[c] + s);
		}
}

/*
 * Pass @pass over images [0, @n) of the launch's; @first: from the
 * batch's image 0, @last: to its last image, which finishes the pass's
 * statistic.
 */
static void bn_fwd_pass(const struct tp_op_launch *l, unsigned pass,
			size_t n, bool first, bool last)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *x = TP_IN(l, 0), *gamma = TP_IN(l, 1), *beta = TP_IN(l, 2);
	float *y = TP_OUT(l, 0), *mean = TP_OUT(l, 1), *invstd = TP_OUT(l, 2);
	float *acc = pass == BN_SUM ? mean : invstd;
	double m = bn_count(p);
	uint32_t c;

	if (pass != BN_OUTPUT) {
		for (c = 0; first && c < p->c; c++)
			acc[c] = 0;
		bn_add_images(p, x, n, pass == BN_SUM ? NULL : mean, acc);
		for (c = 0; last && c < p->c; c++)
			acc[c] = pass == BN_SUM ? (float)(acc[c] / m) :
				 (float)(1.0 / sqrt(acc[c] / m + p->eps));
		return;
	}
	for (size_t i = 0; i < n; i++)
		for (c = 0; c < p->c; c++) {
			const float *xc = BN_AT(p, x, i, c);
			float *yc = BN_AT(p, y, i, c);
			double mu = mean[c], is = invstd[c];

			for (size_t j = 0; j < p->hw; j++)
				yc[j] = (float)((xc[j] - mu) * is * gamma[c] +
						beta[c]);
		}
}

int tp_cpu_batchnorm(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);

	if (l->sums) {
		bn_fwd_pass(l, l->pass, l->rows, !l->row0,
			    l->row0 + l->rows == p->n);
		return 0;
	}
	/* part 0 (or a whole run): the statistics over every row */
	if (tp_writes_whole(l)) {
		bn_fwd_pass(l, BN_SUM, p->n, true, true);
		bn_fwd_pass(l, BN_DEVIATION, p->n, true, true);
	}
	bn_fwd_pass(l, BN_OUTPUT, tp_rows(l, p->n), false, false);
	return 0;
}

/* dbeta += sum dy, dgamma += sum dy xhat, per channel, images [0, @n). */
static void bn_bwd_sums(const struct tp_op_launch *l, size_t n, bool first)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1);
	const float *mean = TP_IN(l, 3), *invstd = TP_IN(l, 4);
	float *dgamma = TP_OUT(l, 1), *dbeta = TP_OUT(l, 2);

	for (uint32_t c = 0; c < p->c; c++) {
		double mu = mean[c], is = invstd[c];

		if (first)
			dgamma[c] = dbeta[c] = 0;
		for (size_t i = 0; i < n; i++) {
			const float *dyc = BN_AT(p, dy, i, c);
			const float *xc = BN_AT(p, x, i, c);
			double sdy = 0, sdyx = 0;

			for (size_t j = 0; j < p->hw; j++) {
				sdy += dyc[j];
				sdyx += dyc[j] * (xc[j] - mu) * is;
			}
			dgamma[c] = (float)((double)dgamma[c] + sdyx);
			dbeta[c] = (float)((double)dbeta[c] + sdy);
		}
	}
}

/* dx = gamma invstd / m (m dy - sum dy - xhat sum dy xhat), @n images */
static void bn_bwd_dx(const struct tp_op_launch *l, size_t n)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *gamma = TP_IN(l, 2);
	const float *mean = TP_IN(l, 3), *invstd = TP_IN(l, 4);
	const float *dgamma = TP_OUT(l, 1), *dbeta = TP_OUT(l, 2);
	float *dx = TP_OUT(l, 0);
	double m = bn_count(p);

	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < p->c; c++) {
			const float *dyc = BN_AT(p, dy, i, c);
			const float *xc = BN_AT(p, x, i, c);
			float *dxc = BN_AT(p, dx, i, c);
			double mu = mean[c], is = invstd[c];
			double k = gamma[c] * is / m;
			double sdy = dbeta[c], sdyx = dgamma[c];

			for (size_t j = 0; j < p->hw; j++) {
				double xh = (xc[j] - mu) * is;

				dxc[j] = (float)(k * (m * dyc[j] - sdy -
						      xh * sdyx));
			}
		}
}

int tp_cpu_batchnorm_bwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);

	if (l->sums && !l->pass) {
		bn_bwd_sums(l, l->rows, !l->row0);
		return 0;
	}
	/* part 0 (or a whole run): the sums over every row */
	if (!l->sums && tp_writes_whole(l))
		bn_bwd_sums(l, p->n, true);
	bn_bwd_dx(l, tp_rows(l, p->n));
	return 0;
}
