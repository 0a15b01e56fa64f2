// SPDX-License-Identifier: MIT
/*
 * CUDA softmax over rows and its backward op: one block per row, sums in
 * double through the fixed reduction tree. A row's bits depend on that
 * row alone, so a part of a split run (rows: rows) gives a whole run's;
 * cuDNN's softmax makes no such promise across row counts.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

static __global__ void softmax_kernel(const float *x, float *y,
				      uint32_t cols)
{
	__shared__ double red[TP_BLOCK];
	double mx;

	tp_row_softmax(x + (size_t)blockIdx.x * cols,
		       y + (size_t)blockIdx.x * cols, cols, red, &mx);
}

/* dx = y (dy - sum dy y) */
static __global__ void softmax_bwd_kernel(const float *dy, const float *y,
					  float *dx, uint32_t cols)
{
	__shared__ double red[TP_BLOCK];
	size_t off = (size_t)blockIdx.x * cols;
	double s = 0;

	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		s += (double)dy[off + j] * y[off + j];
	s = tp_block_sum(s, red);
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		dx[off + j] = (float)(y[off + j] * (dy[off + j] - s));
}

extern "C" int tp_cuda_softmax(const struct tp_op_launch *l)
{
	const struct tp_softmax_params *p = TP_PARAMS(l, tp_softmax_params);

	softmax_kernel<<<(unsigned)tp_rows(l, p->rows), TP_BLOCK, 0,
			 TP_STREAM(l)>>>(TP_IN(l, 0), TP_OUT(l, 0), p->cols);
	return tp_cuda_launched(l, "softmax_kernel");
}

extern "C" int tp_cuda_softmax_bwd(const struct tp_op_launch *l)
{
	const struct tp_softmax_params *p = TP_PARAMS(l, tp_softmax_params);

	softmax_bwd_kernel<<<(unsigned)tp_rows(l, p->rows), TP_BLOCK, 0,
			     TP_STREAM(l)>>>(TP_IN(l, 0), TP_IN(l, 1),
					     TP_OUT(l, 0), p->cols);
	return tp_cuda_launched(l, "softmax_bwd_kernel");
}
