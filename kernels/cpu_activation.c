// SPDX-License-Identifier: MIT
/*
 * CPU ReLU and GELU. GELU is the exact form x Phi(x) (Hendrycks & Gimpel
 * 2016, eq. 1), not the tanh approximation, so it matches erf-based GELU
 * in the frameworks. The backward ops take the forward input x: ReLU's
 * mask x > 0 equals y > 0, and GELU's derivative needs x.
 *
 * Element by element, so a part computes its own elements: its rows are
 * elements (registry.c), the pointers at the first.
 */
#include "config.h"

#include <math.h>

#include "kernels/kernel.h"

int tp_cpu_relu(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *x = TP_IN(l, 0);
	float *y = TP_OUT(l, 0);
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
	return 0;
}

/* Input 1 is x or y: x > 0 is y > 0. */
int tp_cpu_relu_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1);
	float *dx = TP_OUT(l, 0);
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++)
		dx[i] = x[i] > 0 ? dy[i] : 0.0f;
	return 0;
}

int tp_cpu_gelu(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *x = TP_IN(l, 0);
	float *y = TP_OUT(l, 0);
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++)
		y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
	return 0;
}

int tp_cpu_gelu_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1);
	float *dx = TP_OUT(l, 0);
	const float inv_sqrt_2pi = 0.3989422804014327f;
	size_t i, n = tp_rows(l, p->count);

	for (i = 0; i < n; i++) {
		float cdf = 0.5f * (1.0f + erff(x[i] * (float)M_SQRT1_2));
		float pdf = inv_sqrt_2pi * expf(-0.5f * x[i] * x[i]);

		dx[i] = dy[i] * (cdf + x[i] * pdf);
	}
	return 0;
}
