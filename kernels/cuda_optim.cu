// SPDX-License-Identifier: MIT
/*
 * CUDA SGD with momentum and Adam, element by element as cpu_optim.c
 * computes them; the parameter is updated at its own address.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

static __global__ void sgd_kernel(const float *w, const float *g,
				  const float *vel, float *w_out,
				  float *vel_out, struct tp_sgd_params p)
{
	TP_FOR_EACH(i, (size_t)p.count) {
		float d = g[i] + p.weight_decay * w[i];
		float v = p.momentum * vel[i] + d;

		w_out[i] = w[i] - p.lr * v;
		vel_out[i] = v;
	}
}

static __global__ void adam_kernel(const float *w, const float *g,
				   const float *m, const float *v,
				   float *w_out, float *m_out, float *v_out,
				   struct tp_adam_params p, float bc1,
				   float bc2)
{
	TP_FOR_EACH(i, (size_t)p.count) {
		float d = g[i] + p.weight_decay * w[i];
		float mi = p.beta1 * m[i] + (1.0f - p.beta1) * d;
		float vi = p.beta2 * v[i] + (1.0f - p.beta2) * d * d;

		w_out[i] = w[i] - p.lr * (mi / bc1) / (sqrtf(vi / bc2) + p.eps);
		m_out[i] = mi;
		v_out[i] = vi;
	}
}

extern "C" int tp_cuda_sgd(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);

	sgd_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 0),
		TP_OUT(l, 1), *p);
	return tp_cuda_launched(l, "sgd_kernel");
}

extern "C" int tp_cuda_adam(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);
	/* Kingma & Ba, Algorithm 1: bias corrections, as on the CPU */
	float bc1 = (float)(1.0 - pow(p->beta1, p->step));
	float bc2 = (float)(1.0 - pow(p->beta2, p->step));

	adam_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_IN(l, 3),
		TP_OUT(l, 0), TP_OUT(l, 1), TP_OUT(l, 2), *p, bc1, bc2);
	return tp_cuda_launched(l, "adam_kernel");
}
