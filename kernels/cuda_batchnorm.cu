// SPDX-License-Identifier: MIT
/*
 * CUDA batch-norm in training mode, as cpu_batchnorm.c computes it: one
 * block per channel sums over the batch and the spatial positions in
 * double through the fixed reduction tree, then one thread per element
 * computes the outputs from the statistics as stored in float.
 *
 * cuDNN's batch-norm computes both at once, over whatever batch it is
 * given; a part of a split run has only its rows of the output. Here part
 * 0 runs the sums over the whole batch, exactly as a whole run does, and
 * every part runs the element pass on its rows, whose bits depend on
 * nothing but the element and its channel's stored statistics.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

/* The per-channel sums: more threads than TP_BLOCK, few blocks. */
#define BN_BLOCK 1024

/*
 * The index arithmetic in @I: 32 bits where the counts allow (a 64-bit
 * division is several times the instructions, and the sums here are
 * bound by them), else 64. The elements and their order are the same.
 */
static bool bn_narrow(size_t count)
{
	return count <= UINT32_MAX - BN_BLOCK;
}

/* Element @j of channel @ch, counting over images then positions. */
template <typename I>
static __device__ size_t bn_at(I j, uint32_t ch, uint32_t c, uint32_t hw)
{
	I q = j / hw;

	return ((size_t)q * c + ch) * hw + (j - q * hw);
}

/* The channel of element @i of an n x c x hw tensor. */
template <typename I>
static __device__ uint32_t bn_channel(size_t i, uint32_t c, uint32_t hw)
{
	return (uint32_t)((I)i / hw % c);
}

template <typename I>
static __global__ void bn_stats_kernel(const float *x, float *mean,
				       float *invstd, uint32_t n, uint32_t c,
				       uint32_t hw, float eps)
{
	__shared__ double red[BN_BLOCK];
	uint32_t ch = blockIdx.x;
	I m = (I)n * hw;
	double s = 0, v = 0, mu;

	for (I j = threadIdx.x; j < m; j += blockDim.x)
		s += x[bn_at<I>(j, ch, c, hw)];
	mu = tp_block_sum(s, red) / (double)m;
	for (I j = threadIdx.x; j < m; j += blockDim.x) {
		double d = x[bn_at<I>(j, ch, c, hw)] - mu;

		v += d * d;
	}
	v = tp_block_sum(v, red);
	if (!threadIdx.x) {
		mean[ch] = (float)mu;
		invstd[ch] = (float)(1.0 / sqrt(v / (double)m + eps));
	}
}

template <typename I>
static __global__ void bn_apply_kernel(const float *x, const float *gamma,
				       const float *beta, const float *mean,
				       const float *invstd, float *y,
				       uint32_t c, uint32_t hw, size_t n)
{
	TP_FOR_EACH(i, n) {
		uint32_t ch = bn_channel<I>(i, c, hw);
		double mu = mean[ch], is = invstd[ch];

		y[i] = (float)((x[i] - mu) * is * gamma[ch] + beta[ch]);
	}
}

/* dbeta = sum dy, dgamma = sum dy xhat, per channel over the batch. */
template <typename I>
static __global__ void bn_bwd_sums_kernel(const float *dy, const float *x,
					  const float *mean,
					  const float *invstd, float *dgamma,
					  float *dbeta, uint32_t n, uint32_t c,
					  uint32_t hw)
{
	__shared__ double red[BN_BLOCK];
	uint32_t ch = blockIdx.x;
	I m = (I)n * hw;
	double mu = mean[ch], is = invstd[ch], sdy = 0, sdyx = 0;

	for (I j = threadIdx.x; j < m; j += blockDim.x) {
		size_t k = bn_at<I>(j, ch, c, hw);

		sdy += dy[k];
		sdyx += dy[k] * ((x[k] - mu) * is);
	}
	sdy = tp_block_sum(sdy, red);
	sdyx = tp_block_sum(sdyx, red);
	if (!threadIdx.x) {
		dgamma[ch] = (float)sdyx;
		dbeta[ch] = (float)sdy;
	}
}

/* dx = gamma invstd / m (m dy - sum dy - xhat sum dy xhat), m = n hw */
template <typename I>
static __global__ void bn_bwd_dx_kernel(const float *dy, const float *x,
					const float *gamma, const float *mean,
					const float *invstd,
					const float *dgamma,
					const float *dbeta, float *dx,
					uint32_t c, uint32_t hw, double m,
					size_t n)
{
	TP_FOR_EACH(i, n) {
		uint32_t ch = bn_channel<I>(i, c, hw);
		double mu = mean[ch], is = invstd[ch];
		double k = gamma[ch] * is / m, xh = (x[i] - mu) * is;

		dx[i] = (float)(k * (m * dy[i] - dbeta[ch] - xh * dgamma[ch]));
	}
}

template <typename I>
static int bn_fwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	size_t n = tp_rows(l, p->n) * p->c * p->hw;
	int rc;

	if (tp_writes_whole(l)) {
		bn_stats_kernel<I><<<p->c, BN_BLOCK, 0, TP_STREAM(l)>>>(
			TP_IN(l, 0), TP_OUT(l, 1), TP_OUT(l, 2), p->n, p->c,
			p->hw, p->eps);
		rc = tp_cuda_launched(l, "bn_stats_kernel");
		if (rc)
			return rc;
	}
	bn_apply_kernel<I><<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 1),
		TP_OUT(l, 2), TP_OUT(l, 0), p->c, p->hw, n);
	return tp_cuda_launched(l, "bn_apply_kernel");
}

template <typename I>
static int bn_bwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	size_t n = tp_rows(l, p->n) * p->c * p->hw;
	int rc;

	if (tp_writes_whole(l)) {
		bn_bwd_sums_kernel<I><<<p->c, BN_BLOCK, 0, TP_STREAM(l)>>>(
			TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 3), TP_IN(l, 4),
			TP_OUT(l, 1), TP_OUT(l, 2), p->n, p->c, p->hw);
		rc = tp_cuda_launched(l, "bn_bwd_sums_kernel");
		if (rc)
			return rc;
	}
	bn_bwd_dx_kernel<I><<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_IN(l, 3),
		TP_IN(l, 4), TP_OUT(l, 1), TP_OUT(l, 2), TP_OUT(l, 0), p->c,
		p->hw, (double)p->n * p->hw, n);
	return tp_cuda_launched(l, "bn_bwd_dx_kernel");
}

/* The whole tensor's elements: every index the kernels compute. */
static size_t bn_elems(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);

	return (size_t)p->n * p->c * p->hw;
}

extern "C" int tp_cuda_batchnorm(const struct tp_op_launch *l)
{
	return bn_narrow(bn_elems(l)) ? bn_fwd<uint32_t>(l) :
						  bn_fwd<size_t>(l);
}

extern "C" int tp_cuda_batchnorm_bwd(const struct tp_op_launch *l)
{
	return bn_narrow(bn_elems(l)) ? bn_bwd<uint32_t>(l) :
						  bn_bwd<size_t>(l);
}
