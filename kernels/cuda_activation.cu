// SPDX-License-Identifier: MIT
/*
 * CUDA ReLU and GELU, as cpu_activation.c computes them (GELU the exact
 * x Phi(x) form). One thread per element: an element's bits depend on it
 * alone, so a part of a split run (rows: elements) gives a whole run's.
 */
#include "kernels/cuda_launch.cuh"

static __global__ void relu_kernel(const float *x, float *y, size_t n)
{
	TP_FOR_EACH(i, n)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}

/* The mask x > 0 is y > 0: given y in place of x (as the models' tape
 * gives it), the same bits. */
static __global__ void relu_bwd_kernel(const float *dy, const float *x,
				       float *dx, size_t n)
{
	TP_FOR_EACH(i, n)
		dx[i] = x[i] > 0 ? dy[i] : 0.0f;
}

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

extern "C" int tp_cuda_relu(const struct tp_op_launch *l)
{
	return tp_eltwise1(l, relu_kernel, "relu_kernel");
}

extern "C" int tp_cuda_relu_bwd(const struct tp_op_launch *l)
{
	return tp_eltwise2(l, relu_bwd_kernel, "relu_bwd_kernel");
}

extern "C" int tp_cuda_gelu(const struct tp_op_launch *l)
{
	return tp_eltwise1(l, gelu_kernel, "gelu_kernel");
}

extern "C" int tp_cuda_gelu_bwd(const struct tp_op_launch *l)
{
	return tp_eltwise2(l, gelu_bwd_kernel, "gelu_bwd_kernel");
}
