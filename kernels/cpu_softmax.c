// SPDX-License-Identifier: MIT
/*
 * CPU softmax over rows and the cross-entropy loss (softmax + negative log
 * likelihood, mean over the batch). The loss is computed from the
 * log-sum-exp, not from log(prob), so a confident wrong class gives a large
 * finite loss rather than inf.
 *
 * Softmax works row by row, so a part computes its rows. Cross-entropy's
 * loss is a mean over the batch and does not run in parts.
 */
#include "config.h"

#include <errno.h>
#include <math.h>

#include "kernels/kernel.h"

/* y = softmax(x) of one row; returns log(sum exp(x - max)) + max. */
static double softmax_row(const float *x, float *y, uint32_t cols)
{
	float mx = x[0];
	double s = 0;
	uint32_t j;

	for (j = 1; j < cols; j++)
		if (x[j] > mx)
			mx = x[j];
	for (j = 0; j < cols; j++)
		s += exp((double)x[j] - mx);
	for (j = 0; j < cols; j++)
		y[j] = (float)(exp((double)x[j] - mx) / s);
	return log(s) + mx;
}

int tp_cpu_softmax(const struct tp_op_launch *l)
{
	const struct tp_softmax_params *p = TP_PARAMS(l, tp_softmax_params);
	size_t r, rows = tp_rows(l, p->rows);

	for (r = 0; r < rows; r++)
		softmax_row(TP_IN(l, 0) + r * p->cols,
			    TP_OUT(l, 0) + r * p->cols, p->cols);
	return 0;
}

int tp_cpu_softmax_bwd(const struct tp_op_launch *l)
{
	const struct tp_softmax_params *p = TP_PARAMS(l, tp_softmax_params);
	size_t r, rows = tp_rows(l, p->rows);
	uint32_t j;

	for (r = 0; r < rows; r++) {
		const float *dy = TP_IN(l, 0) + r * p->cols;
		const float *y = TP_IN(l, 1) + r * p->cols;
		float *dx = TP_OUT(l, 0) + r * p->cols;
		double s = 0;

		/* dx = y (dy - sum dy y) */
		for (j = 0; j < p->cols; j++)
			s += (double)dy[j] * y[j];
		for (j = 0; j < p->cols; j++)
			dx[j] = (float)(y[j] * (dy[j] - s));
	}
	return 0;
}

static int check_labels(const int32_t *labels, uint32_t n, uint32_t classes)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (labels[i] < 0 || (uint32_t)labels[i] >= classes)
			return -EINVAL;
	return 0;
}

int tp_cpu_cross_entropy(const struct tp_op_launch *l)
{
	const struct tp_xent_params *p = TP_PARAMS(l, tp_xent_params);
	const int32_t *labels = l->in[1];
	double loss = 0;
	uint32_t i;

	if (check_labels(labels, p->n, p->classes))
		return -EINVAL;
	for (i = 0; i < p->n; i++) {
		const float *x = TP_IN(l, 0) + (size_t)i * p->classes;
		double lse = softmax_row(x, TP_OUT(l, 1) + (size_t)i * p->classes,
					 p->classes);

		loss += lse - x[labels[i]];
	}
	TP_OUT(l, 0)[0] = (float)(loss / p->n);
	return 0;
}

int tp_cpu_cross_entropy_bwd(const struct tp_op_launch *l)
{
	const struct tp_xent_params *p = TP_PARAMS(l, tp_xent_params);
	const int32_t *labels = l->in[2];
	float g = TP_IN(l, 0)[0] / (float)p->n;
	uint32_t i, j;

	if (check_labels(labels, p->n, p->classes))
		return -EINVAL;
	/* dlogits = dloss / n (prob - onehot(label)) */
	for (i = 0; i < p->n; i++) {
		const float *prob = TP_IN(l, 1) + (size_t)i * p->classes;
		float *dx = TP_OUT(l, 0) + (size_t)i * p->classes;

		for (j = 0; j < p->classes; j++)
			dx[j] = g * (prob[j] - ((int32_t)j == labels[i]));
	}
	return 0;
}
