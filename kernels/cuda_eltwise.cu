// SPDX-License-Identifier: MIT
/*
 * CUDA element-wise ops (residual add, scale), the head transpose, and the
 * bias helpers of the cuBLAS linear op: a bias added to every row, and column sums for its
 * gradient (one thread per column, rows in order: deterministic).
 *
 * In parts, an element-wise op computes its elements and a transpose its
 * rows of the outermost dimension; each element's bits depend on it alone.
 */
#include "kernels/cuda_launch.cuh"

static __global__ void add_kernel(const float *a, const float *b, float *y,
				  size_t n)
{
	TP_FOR_EACH(i, n)
		y[i] = a[i] + b[i];
}

static __global__ void scale_kernel(const float *x, float *y, float alpha,
				    size_t n)
{
	TP_FOR_EACH(i, n)
		y[i] = alpha * x[i];
}

static __global__ void bias_rows_kernel(float *y, const float *b,
					uint32_t cols, size_t n)
{
	TP_FOR_EACH(i, n)
		y[i] += b[i % cols];
}

/*
 * Column sums over rows in double: a block takes TP_COLS_BLOCK columns,
 * and its TP_ROW_LANES lanes of threads deal the rows among them (lane y
 * sums rows y, y + TP_ROW_LANES, ...), then lane 0 adds the lanes' sums in
 * lane order. The order is fixed by the row count alone, so the sums are
 * deterministic, and every row is read by as many threads as the GPU
 * keeps busy: a thread per column summing every row in turn waits on one
 * load after another (a bias gradient of 27648 rows took milliseconds).
 */
static __global__ void __launch_bounds__(TP_COLS_BLOCK * TP_ROW_LANES)
col_sum_kernel(const float *x, float *sum, uint32_t rows, uint32_t cols)
{
	__shared__ double lane[TP_ROW_LANES][TP_COLS_BLOCK + 1];
	uint32_t j = blockIdx.x * TP_COLS_BLOCK + threadIdx.x;
	double s = 0;

	if (j < cols)
		for (uint32_t r = threadIdx.y; r < rows; r += TP_ROW_LANES)
			s += x[(size_t)r * cols + j];
	lane[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y || j >= cols)
		return;
	for (unsigned y = 1; y < TP_ROW_LANES; y++)
		s += lane[y][threadIdx.x];
	sum[j] = (float)s;
}

/* y[a][c][b][d] = x[a][b][c][d] */
static __global__ void transpose12_kernel(const float *x, float *y,
					  uint32_t b, uint32_t c, uint32_t d,
					  size_t n)
{
	TP_FOR_EACH(o, n) {
		size_t e = o % d, r = o / d;
		size_t j = r % b, k = (r / b) % c, i = r / ((size_t)b * c);

		y[o] = x[((i * b + j) * c + k) * d + e];
	}
}

extern "C" cudaError_t tp_cuda_bias_rows(float *y, const float *b,
					 uint32_t rows, uint32_t cols,
					 cudaStream_t s)
{
	size_t n = (size_t)rows * cols;

	bias_rows_kernel<<<tp_grid(n), TP_BLOCK, 0, s>>>(y, b, cols, n);
	return cudaGetLastError();
}

extern "C" cudaError_t tp_cuda_col_sum(const float *x, float *sum,
				       uint32_t rows, uint32_t cols,
				       cudaStream_t s)
{
	col_sum_kernel<<<tp_col_blocks(cols), tp_col_threads(), 0, s>>>(
		x, sum, rows, cols);
	return cudaGetLastError();
}

extern "C" int tp_cuda_add(const struct tp_op_launch *l)
{
	return tp_eltwise2(l, add_kernel, "add_kernel");
}

extern "C" int tp_cuda_add_bwd(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	size_t bytes = tp_rows(l, p->count) * sizeof(float);
	int rc;

	/* Copies: their addresses are checked when enqueued. */
	rc = tp_op_before_copy(l);
	if (rc)
		return rc;
	rc = tp_cuda_check(l, cudaMemcpyAsync(TP_OUT(l, 0), TP_IN(l, 0),
					      bytes, cudaMemcpyDeviceToDevice,
					      TP_STREAM(l)), "cudaMemcpyAsync");
	if (rc)
		return rc;
	return tp_cuda_check(l, cudaMemcpyAsync(TP_OUT(l, 1), TP_IN(l, 0),
						bytes, cudaMemcpyDeviceToDevice,
						TP_STREAM(l)),
			     "cudaMemcpyAsync");
}

extern "C" int tp_cuda_scale(const struct tp_op_launch *l)
{
	const struct tp_eltwise_params *p = TP_PARAMS(l, tp_eltwise_params);
	size_t n = tp_rows(l, p->count);

	scale_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), p->alpha, n);
	return tp_cuda_launched(l, "scale_kernel");
}

extern "C" int tp_cuda_scale_bwd(const struct tp_op_launch *l)
{
	return tp_cuda_scale(l);
}

static int transpose12(const struct tp_op_launch *l, uint32_t b, uint32_t c)
{
	const struct tp_transpose_params *p = TP_PARAMS(l, tp_transpose_params);
	size_t n = tp_rows(l, p->a) * p->b * p->c * p->d;

	transpose12_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), b, c, p->d, n);
	return tp_cuda_launched(l, "transpose12_kernel");
}

extern "C" int tp_cuda_transpose12(const struct tp_op_launch *l)
{
	const struct tp_transpose_params *p = TP_PARAMS(l, tp_transpose_params);

	return transpose12(l, p->b, p->c);
}

extern "C" int tp_cuda_transpose12_bwd(const struct tp_op_launch *l)
{
	const struct tp_transpose_params *p = TP_PARAMS(l, tp_transpose_params);

	return transpose12(l, p->c, p->b);
}
