// SPDX-License-Identifier: MIT
/*
 * CPU optimizer steps, each updating one tensor in place (output 0 is
 * input 0, TP_OP_INPLACE): first the state from the gradient, then the
 * parameter from the state. Each element is read before it is written, so
 * the aliasing is safe.
 */
#include "config.h"

#include <math.h>

#include "kernels/kernel.h"

int tp_cpu_sgd_momentum(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);
	const float *vel = TP_IN(l, 0), *g = TP_IN(l, 1), *w = TP_IN(l, 2);
	float *vel_out = TP_OUT(l, 0);
	uint32_t i;

	for (i = 0; i < p->count; i++)
		vel_out[i] = p->momentum * vel[i] +
			     (g[i] + p->weight_decay * w[i]);
	return 0;
}

int tp_cpu_sgd(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);
	const float *w = TP_IN(l, 0), *vel = TP_IN(l, 1);
	float *w_out = TP_OUT(l, 0);
	uint32_t i;

	for (i = 0; i < p->count; i++)
		w_out[i] = w[i] - p->lr * vel[i];
	return 0;
}

int tp_cpu_adam_moments(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);
	const float *m = TP_IN(l, 0), *v = m + p->count;
	const float *g = TP_IN(l, 1), *w = TP_IN(l, 2);
	float *m_out = TP_OUT(l, 0), *v_out = m_out + p->count;
	uint32_t i;

	for (i = 0; i < p->count; i++) {
		float d = g[i] + p->weight_decay * w[i];

		m_out[i] = p->beta1 * m[i] + (1.0f - p->beta1) * d;
		v_out[i] = p->beta2 * v[i] + (1.0f - p->beta2) * d * d;
	}
	return 0;
}

int tp_cpu_adam(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);
	const float *w = TP_IN(l, 0), *m = TP_IN(l, 1), *v = m + p->count;
	float *w_out = TP_OUT(l, 0);
	/* Kingma & Ba, Algorithm 1: bias corrections 1 - beta^t */
	float bc1 = (float)(1.0 - pow(p->beta1, p->step));
	float bc2 = (float)(1.0 - pow(p->beta2, p->step));
	uint32_t i;

	for (i = 0; i < p->count; i++)
		w_out[i] = w[i] - p->lr * (m[i] / bc1) /
				  (sqrtf(v[i] / bc2) + p->eps);
	return 0;
}
