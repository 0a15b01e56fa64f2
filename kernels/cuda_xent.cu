// SPDX-License-Identifier: MIT
/*
 * CUDA cross-entropy: one block per row computes the softmax and the row's
 * loss from the log-sum-exp; one block then averages the row losses
 * through the fixed reduction tree. A label out of range contributes no
 * loss and no gradient (a kernel cannot fail the op).
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

static __global__ void xent_row_kernel(const float *x, const int32_t *labels,
				       float *prob, double *row_loss,
				       uint32_t classes)
{
	__shared__ double red[TP_BLOCK];
	const float *xr = x + (size_t)blockIdx.x * classes;
	float *pr = prob + (size_t)blockIdx.x * classes;
	int32_t label = labels[blockIdx.x];
	double mx, s = tp_row_softmax(xr, pr, classes, red, &mx);

	if (!threadIdx.x)
		row_loss[blockIdx.x] = label >= 0 && (uint32_t)label < classes ?
				       log(s) + mx - xr[label] : 0.0;
}

static __global__ void xent_mean_kernel(const double *row_loss, float *loss,
					uint32_t n)
{
	__shared__ double red[TP_BLOCK];
	double s = 0;

	for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
		s += row_loss[i];
	s = tp_block_sum(s, red);
	if (!threadIdx.x)
		loss[0] = (float)(s / n);
}

static __global__ void xent_bwd_kernel(const float *dloss, const float *prob,
				       const int32_t *labels, float *dx,
				       uint32_t n, uint32_t classes)
{
	float g = dloss[0] / (float)n;

	TP_FOR_EACH(k, (size_t)n * classes) {
		int32_t label = labels[k / classes];
		uint32_t j = (uint32_t)(k % classes);
		bool valid = label >= 0 && (uint32_t)label < classes;

		dx[k] = valid ? g * (prob[k] - ((int32_t)j == label)) : 0.0f;
	}
}

extern "C" int tp_cuda_cross_entropy(const struct tp_op_launch *l)
{
	const struct tp_xent_params *p = TP_PARAMS(l, tp_xent_params);
	double *row_loss;
	int rc;

	rc = tp_cuda_check(l, cudaMallocAsync((void **)&row_loss,
					      p->n * sizeof(double),
					      TP_STREAM(l)),
			   "cudaMallocAsync");
	if (rc)
		return rc;
	xent_row_kernel<<<p->n, TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), (const int32_t *)l->in[1], TP_OUT(l, 1),
		row_loss, p->classes);
	rc = tp_cuda_launched(l, "xent_row_kernel");
	if (!rc) {
		xent_mean_kernel<<<1, TP_BLOCK, 0, TP_STREAM(l)>>>(
			row_loss, TP_OUT(l, 0), p->n);
		rc = tp_cuda_launched(l, "xent_mean_kernel");
	}
	cudaFreeAsync(row_loss, TP_STREAM(l));
	return rc;
}

extern "C" int tp_cuda_cross_entropy_bwd(const struct tp_op_launch *l)
{
	const struct tp_xent_params *p = TP_PARAMS(l, tp_xent_params);
	size_t n = (size_t)p->n * p->classes;

	xent_bwd_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), (const int32_t *)l->in[2],
		TP_OUT(l, 0), p->n, p->classes);
	return tp_cuda_launched(l, "xent_bwd_kernel");
}
