// SPDX-License-Identifier: MIT
/* CPU element-wise ops: the residual add and a scale, with backward ops. */
#include "config.h"

#include <string.h>

#include "kernels/kernel.h"

int tp_cpu_add(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *a = TP_IN(l, 0), *b = TP_IN(l, 1);
	float *y = TP_OUT(l, 0);
	uint32_t i;

	for (i = 0; i < p->count; i++)
		y[i] = a[i] + b[i];
	return 0;
}

int tp_cpu_add_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	size_t bytes = (size_t)p->count * sizeof(float);

	memcpy(TP_OUT(l, 0), TP_IN(l, 0), bytes);
	memcpy(TP_OUT(l, 1), TP_IN(l, 0), bytes);
	return 0;
}

int tp_cpu_scale(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *x = TP_IN(l, 0);
	float *y = TP_OUT(l, 0);
	uint32_t i;

	for (i = 0; i < p->count; i++)
		y[i] = p->alpha * x[i];
	return 0;
}

/* d(alpha x)/dx = alpha: the backward op is the forward op on dy. */
int tp_cpu_scale_bwd(const struct tp_op_launch *l)
{
	return tp_cpu_scale(l);
}
