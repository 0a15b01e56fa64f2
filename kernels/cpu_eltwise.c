// SPDX-License-Identifier: MIT
/*
 * CPU element-wise and layout ops: the residual add, a scale, and the
 * transpose that moves attention heads, with their backward ops.
 *
 * In parts: the element-wise ops' rows are elements, the transposes' the
 * outermost dimension (a), which they keep; the pointers are at the
 * part's first row.
 */
#include "config.h"

#include <string.h>

#include "kernels/kernel.h"

int tp_cpu_add(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *a = TP_IN(l, 0), *b = TP_IN(l, 1);
	float *y = TP_OUT(l, 0);
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++)
		y[i] = a[i] + b[i];
	return 0;
}

int tp_cpu_add_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	size_t bytes = tp_rows(l, p->count) * sizeof(float);

	memcpy(TP_OUT(l, 0), TP_IN(l, 0), bytes);
	memcpy(TP_OUT(l, 1), TP_IN(l, 0), bytes);
	return 0;
}

int tp_cpu_scale(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *x = TP_IN(l, 0);
	float *y = TP_OUT(l, 0);
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++)
		y[i] = p->alpha * x[i];
	return 0;
}

/* d(alpha x)/dx = alpha: the backward op is the forward op on dy. */
int tp_cpu_scale_bwd(const struct tp_op_launch *l)
{
	return tp_cpu_scale(l);
}

/* y[a][c][b][d] = x[a][b][c][d], whole rows of d at a time. */
static void transpose12(const float *x, float *y, size_t a, uint32_t b,
			uint32_t c, uint32_t d)
{
	size_t i;
	uint32_t j, k;

	for (i = 0; i < a; i++)
		for (j = 0; j < b; j++)
			for (k = 0; k < c; k++)
				memcpy(y + (((size_t)i * c + k) * b + j) * d,
				       x + (((size_t)i * b + j) * c + k) * d,
				       (size_t)d * sizeof(float));
}

int tp_cpu_transpose12(const struct tp_op_launch *l)
{
	const struct tp_transpose_params *p = TP_PARAMS(l, tp_transpose_params);

	transpose12(TP_IN(l, 0), TP_OUT(l, 0), tp_rows(l, p->a), p->b, p->c,
		    p->d);
	return 0;
}

/* The gradient goes back through the inverse: swap b and c again. */
int tp_cpu_transpose12_bwd(const struct tp_op_launch *l)
{
	const struct tp_transpose_params *p = TP_PARAMS(l, tp_transpose_params);

	transpose12(TP_IN(l, 0), TP_OUT(l, 0), tp_rows(l, p->a), p->c, p->b,
		    p->d);
	return 0;
}
