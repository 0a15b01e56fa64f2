// SPDX-License-Identifier: MIT
/*
 * CUDA layer-norm: one block per row, statistics in double through the
 * fixed reduction tree. The parameter gradients sum over rows in a fixed
 * order (lanes of rows per column, then the lanes in order: see
 * col_sum_kernel), so no atomics are needed.
 *
 * In parts, each part runs its rows' blocks, whose bits depend on their
 * row alone, and part 0 the parameter gradients over every row.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

static __global__ void ln_fwd_kernel(const float *x, const float *gamma,
				     const float *beta, float *y, float *mean,
				     float *invstd, uint32_t cols, float eps)
{
	__shared__ double red[TP_BLOCK];
	const float *xr = x + (size_t)blockIdx.x * cols;
	float *yr = y + (size_t)blockIdx.x * cols;
	double s = 0, v = 0, mu, is;

	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		s += xr[j];
	mu = tp_block_sum(s, red) / cols;
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		v += (xr[j] - mu) * (xr[j] - mu);
	is = 1.0 / sqrt(tp_block_sum(v, red) / cols + eps);
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
		yr[j] = (float)((xr[j] - mu) * is * gamma[j] + beta[j]);
	if (!threadIdx.x) {
		mean[blockIdx.x] = (float)mu;
		invstd[blockIdx.x] = (float)is;
	}
}

static __global__ void ln_bwd_dx_kernel(const float *dy, const float *x,
					const float *gamma, const float *mean,
					const float *invstd, float *dx,
					uint32_t cols)
{
	__shared__ double red[TP_BLOCK];
	size_t off = (size_t)blockIdx.x * cols;
	double mu = mean[blockIdx.x], is = invstd[blockIdx.x], n = cols;
	double sg = 0, sgx = 0;

	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) {
		double g = (double)dy[off + j] * gamma[j];

		sg += g;
		sgx += g * (x[off + j] - mu) * is;
	}
	sg = tp_block_sum(sg, red);
	sgx = tp_block_sum(sgx, red);
	/* dx = invstd / n (n g - sum g - xhat sum g xhat), g = dy gamma */
	for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) {
		double xh = (x[off + j] - mu) * is;
		double g = (double)dy[off + j] * gamma[j];

		dx[off + j] = (float)(is / n * (n * g - sg - xh * sgx));
	}
}

/* dgamma = sum dy xhat, dbeta = sum dy over rows, as col_sum_kernel sums */
static __global__ void __launch_bounds__(TP_COLS_BLOCK * TP_ROW_LANES)
ln_bwd_param_kernel(const float *dy, const float *x, const float *mean,
		    const float *invstd, float *dgamma, float *dbeta,
		    uint32_t rows, uint32_t cols)
{
	__shared__ double lane_g[TP_ROW_LANES][TP_COLS_BLOCK + 1];
	__shared__ double lane_b[TP_ROW_LANES][TP_COLS_BLOCK + 1];
	uint32_t j = blockIdx.x * TP_COLS_BLOCK + threadIdx.x;
	double sg = 0, sb = 0;

	if (j < cols)
		for (uint32_t r = threadIdx.y; r < rows; r += TP_ROW_LANES) {
			size_t k = (size_t)r * cols + j;

			sg += dy[k] * ((x[k] - (double)mean[r]) * invstd[r]);
			sb += dy[k];
		}
	lane_g[threadIdx.y][threadIdx.x] = sg;
	lane_b[threadIdx.y][threadIdx.x] = sb;
	__syncthreads();
	if (threadIdx.y || j >= cols)
		return;
	for (unsigned y = 1; y < TP_ROW_LANES; y++) {
		sg += lane_g[y][threadIdx.x];
		sb += lane_b[y][threadIdx.x];
	}
	dgamma[j] = (float)sg;
	dbeta[j] = (float)sb;
}

extern "C" int tp_cuda_layernorm(const struct tp_op_launch *l)
{
	const struct tp_layernorm_params *p = TP_PARAMS(l, tp_layernorm_params);

	ln_fwd_kernel<<<(unsigned)tp_rows(l, p->rows), TP_BLOCK, 0,
			TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 0),
		TP_OUT(l, 1), TP_OUT(l, 2), p->cols, p->eps);
	return tp_cuda_launched(l, "ln_fwd_kernel");
}

extern "C" int tp_cuda_layernorm_bwd(const struct tp_op_launch *l)
{
	const struct tp_layernorm_params *p = TP_PARAMS(l, tp_layernorm_params);
	int rc;

	ln_bwd_dx_kernel<<<(unsigned)tp_rows(l, p->rows), TP_BLOCK, 0,
			   TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_IN(l, 3),
		TP_IN(l, 4), TP_OUT(l, 0), p->cols);
	rc = tp_cuda_launched(l, "ln_bwd_dx_kernel");
	if (rc || !tp_writes_whole(l))
		return rc;
	ln_bwd_param_kernel<<<tp_col_blocks(p->cols), tp_col_threads(), 0,
			      TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 3), TP_IN(l, 4),
		TP_OUT(l, 1), TP_OUT(l, 2), p->rows, p->cols);
	return tp_cuda_launched(l, "ln_bwd_param_kernel");
}
