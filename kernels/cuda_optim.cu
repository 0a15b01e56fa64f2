// SPDX-License-Identifier: MIT
/*
 * CUDA optimizer steps, element by element as cpu_optim.c computes them,
 * each updating its output 0 in place over input 0.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

static __global__ void sgd_momentum_kernel(const float *vel, const float *g,
					   const float *w, float *vel_out,
					   struct tp_sgd_params p)
{
	TP_FOR_EACH(i, (size_t)p.count)
		vel_out[i] = p.momentum * vel[i] + (g[i] + p.weight_decay * w[i]);
}

static __global__ void sgd_kernel(const float *w, const float *vel,
				  float *w_out, struct tp_sgd_params p)
{
	TP_FOR_EACH(i, (size_t)p.count)
		w_out[i] = w[i] - p.lr * vel[i];
}

static __global__ void adam_moments_kernel(const float *m, const float *g,
					   const float *w, float *m_out,
					   struct tp_adam_params p)
{
	const float *v = m + p.count;
	float *v_out = m_out + p.count;

	TP_FOR_EACH(i, (size_t)p.count) {
		float d = g[i] + p.weight_decay * w[i];

		m_out[i] = p.beta1 * m[i] + (1.0f - p.beta1) * d;
		v_out[i] = p.beta2 * v[i] + (1.0f - p.beta2) * d * d;
	}
}

static __global__ void adam_kernel(const float *w, const float *m,
				   float *w_out, struct tp_adam_params p,
				   float bc1, float bc2)
{
	const float *v = m + p.count;

	TP_FOR_EACH(i, (size_t)p.count)
		w_out[i] = w[i] - p.lr * (m[i] / bc1) /
				  (sqrtf(v[i] / bc2) + p.eps);
}

extern "C" int tp_cuda_sgd_momentum(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);

	sgd_momentum_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 0), *p);
	return tp_cuda_launched(l, "sgd_momentum_kernel");
}

extern "C" int tp_cuda_sgd(const struct tp_op_launch *l)
{
	const struct tp_sgd_params *p = TP_PARAMS(l, tp_sgd_params);

	sgd_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_OUT(l, 0), *p);
	return tp_cuda_launched(l, "sgd_kernel");
}

extern "C" int tp_cuda_adam_moments(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);

	adam_moments_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 0), *p);
	return tp_cuda_launched(l, "adam_moments_kernel");
}

extern "C" int tp_cuda_adam(const struct tp_op_launch *l)
{
	const struct tp_adam_params *p = TP_PARAMS(l, tp_adam_params);
	/* Kingma & Ba, Algorithm 1: bias corrections, as on the CPU */
	float bc1 = (float)(1.0 - pow(p->beta1, p->step));
	float bc2 = (float)(1.0 - pow(p->beta2, p->step));

	adam_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_OUT(l, 0), *p, bc1, bc2);
	return tp_cuda_launched(l, "adam_kernel");
}
