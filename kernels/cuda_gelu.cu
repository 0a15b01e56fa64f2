// SPDX-License-Identifier: MIT
/* CUDA GELU, the exact x Phi(x) form, as cpu_activation.c computes it. */
#include "kernels/cuda_launch.cuh"

static __global__ void gelu_kernel(const float *x, float *y, size_t n)
{
	TP_FOR_EACH(i, n)
		y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

static __global__ void gelu_bwd_kernel(const float *dy, const float *x,
				       float *dx, size_t n)
{
	TP_FOR_EACH(i, n) {
		float cdf = 0.5f * (1.0f + erff(x[i] * 0.70710678118654752f));
		float pdf = 0.3989422804014327f * expf(-0.5f * x[i] * x[i]);

		dx[i] = dy[i] * (cdf + x[i] * pdf);
	}
}

extern "C" int tp_cuda_gelu(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);

	gelu_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), p->count);
	return tp_cuda_launched(l, "gelu_kernel");
}

extern "C" int tp_cuda_gelu_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);

	gelu_bwd_kernel<<<tp_grid(p->count), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_OUT(l, 0), p->count);
	return tp_cuda_launched(l, "gelu_bwd_kernel");
}
