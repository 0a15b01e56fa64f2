/* SPDX-License-Identifier: MIT */
/*
 * Helpers of tpager's own CUDA kernels: launch geometry and the
 * deterministic block reduction (a fixed tree over a power-of-two block,
 * in double), so every run sums in the same order. No atomics.
 */
#ifndef TP_KERNELS_CUDA_LAUNCH_CUH
#define TP_KERNELS_CUDA_LAUNCH_CUH

#include "config.h"

#include <math.h>
#include <stdint.h>

#include "kernels/cuda_util.h"

#define TP_BLOCK 256

/* Blocks for a grid-stride loop over @n elements. */
static inline unsigned tp_grid(size_t n)
{
	size_t b = (n + TP_BLOCK - 1) / TP_BLOCK;

	return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

/*
 * Sums over rows per column (bias and layer-norm parameter gradients): a
 * block of TP_COLS_BLOCK columns by TP_ROW_LANES lanes of rows.
 */
#define TP_COLS_BLOCK 32
#define TP_ROW_LANES 32

static inline unsigned tp_col_blocks(uint32_t cols)
{
	return cols ? (cols + TP_COLS_BLOCK - 1) / TP_COLS_BLOCK : 1;
}

static inline dim3 tp_col_threads(void)
{
	return dim3(TP_COLS_BLOCK, TP_ROW_LANES);
}

#define TP_FOR_EACH(i, n) \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; \
	     i < (n); i += (size_t)gridDim.x * blockDim.x)

/*
 * Sum of @v over the warp, by a fixed butterfly; every lane gets it (its
 * two operands' sum either way round, the same in IEEE arithmetic).
 */
static __device__ double tp_warp_sum(double v)
{
	for (unsigned s = 16; s > 0; s >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, s);
	return v;
}

/* Sum of @v over the block; every thread gets it. @red has TP_BLOCK. */
static __device__ double tp_block_sum(double v, double *red)
{
	red[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			red[threadIdx.x] += red[threadIdx.x + s];
		__syncthreads();
	}
	v = red[0];
	__syncthreads();
	return v;
}

/* Maximum of @v over the block; every thread gets it. */
static __device__ double tp_block_max(double v, double *red)
{
	red[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s && red[threadIdx.x + s] > red[threadIdx.x])
			red[threadIdx.x] = red[threadIdx.x + s];
		__syncthreads();
	}
	v = red[0];
	__syncthreads();
	return v;
}

/*
 * One row's softmax by the block, in double: y = exp(x - max) / sum.
 * Return the sum; *@mx gets the row's maximum (for a log-sum-exp).
 */
static __device__ double tp_row_softmax(const float *x, float *y,
					uint32_t cols, double *red, double *mx)
{
	double m = -INFINITY, s = 0;

	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		m = fmax(m, (double)x[j]);
	m = tp_block_max(m, red);
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		s += exp((double)x[j] - m);
	s = tp_block_sum(s, red);
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		y[j] = (float)(exp((double)x[j] - m) / s);
	*mx = m;
	return s;
}

/* The launch's error, reported against op @l. */
static inline int tp_cuda_launched(const struct tp_op_launch *l,
				   const char *what)
{
	return tp_cuda_check(l, cudaGetLastError(), what);
}

/*
 * An elementwise op (struct tp_eltwise_params) over the elements of its
 * launch, a part's or all: @k reads input 0 (and 1) and writes output 0.
 */
typedef void (*tp_eltwise1_fn)(const float *x, float *y, size_t n);
typedef void (*tp_eltwise2_fn)(const float *a, const float *b, float *y,
			       size_t n);

static inline int tp_eltwise1(const struct tp_op_launch *l, tp_eltwise1_fn k,
			      const char *what)
{
	size_t n = tp_rows(l, TP_PARAMS(l, tp_eltwise_params)->count);

	k<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(TP_IN(l, 0),
						     TP_OUT(l, 0), n);
	return tp_cuda_launched(l, what);
}

static inline int tp_eltwise2(const struct tp_op_launch *l, tp_eltwise2_fn k,
			      const char *what)
{
	size_t n = tp_rows(l, TP_PARAMS(l, tp_eltwise_params)->count);

	k<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(TP_IN(l, 0), TP_IN(l, 1),
						     TP_OUT(l, 0), n);
	return tp_cuda_launched(l, what);
}

#endif /* TP_KERNELS_CUDA_LAUNCH_CUH */
