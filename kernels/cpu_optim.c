// SPDX-License-Identifier: MIT
/*
 * CPU optimizer steps. Output 0 is the parameter, updated at its own
 * address (TP_OP_INPLACE: out[0] may be in[0]); the new optimizer state is
 * written to the other outputs, which may also alias their inputs. Each
 * element is read before it is written, so aliasing is safe.
 */
#include "config.h"

#include <math.h>

#include "kernels/kernel.h"

int tp_cpu_sgd(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);
	const float *w = TP_IN(l, 0), *g = TP_IN(l, 1), *vel = TP_IN(l, 2);
	float *w_out = TP_OUT(l, 0), *vel_out = TP_OUT(l, 1);
	uint32_t i;

	for (i = 0; i < p->count; i++) {
		float d = g[i] + p->weight_decay * w[i];
		float v = p->momentum * vel[i] + d;

		w_out[i] = w[i] - p->lr * v;
		vel_out[i] = v;
	}
	return 0;
}

int tp_cpu_adam(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);
	const float *w = TP_IN(l, 0), *g = TP_IN(l, 1);
	const float *m = TP_IN(l, 2), *v = TP_IN(l, 3);
	float *w_out = TP_OUT(l, 0), *m_out = TP_OUT(l, 1);
	float *v_out = TP_OUT(l, 2);
	/* Kingma & Ba, Algorithm 1: bias corrections 1 - beta^t */
	float bc1 = (float)(1.0 - pow(p->beta1, p->step));
	float bc2 = (float)(1.0 - pow(p->beta2, p->step));
	uint32_t i;

	for (i = 0; i < p->count; i++) {
		float d = g[i] + p->weight_decay * w[i];
		float mi = p->beta1 * m[i] + (1.0f - p->beta1) * d;
		float vi = p->beta2 * v[i] + (1.0f - p->beta2) * d * d;

		w_out[i] = w[i] - p->lr * (mi / bc1) /
				  (sqrtf(vi / bc2) + p->eps);
		m_out[i] = mi;
		v_out[i] = vi;
	}
	return 0;
}
