// SPDX-License-Identifier: MIT
/*
 * CUDA batch-norm in training mode, in the passes cpu_batchnorm.c makes:
 * the sum of each channel, the sum of its squared deviations from the
 * mean, then the outputs; backward, dbeta = sum dy and dgamma = sum dy
 * xhat, then dx. A pass's sums are taken per image and channel, one warp
 * over each image's hw contiguous elements in double (a fixed butterfly),
 * then added to the channel's float one image after another in order, by
 * one thread per channel: the sums come out the same whatever rows a
 * launch has. Part 0 of a split run makes them over every row, as a whole
 * run does; parts that sum (l->sums) make each pass in parts, part 0 of a
 * pass starting its sums and the last part making them the statistic.
 *
 * cuDNN's batch-norm computes the statistics and the outputs at once over
 * whatever batch it is given; a part of a split run has only its rows.
 * The per-element outputs here depend on nothing but the element and its
 * channel's statistics as stored in float.
 */
#include "kernels/cuda_launch.cuh"

#include <math.h>

/* The forward op's passes over the rows (the registry says 3). */
enum { BN_SUM, BN_DEVIATION, BN_OUTPUT };

/* What a warp sums over one image's channel. */
enum bn_seg { SEG_X, SEG_DEVIATION, SEG_BWD };

#define BN_SEG_WARPS	8	/* per block of the per-image sums */
#define BN_CARRY_BLOCK	128	/* channels per block of the carry */

/*
 * The index arithmetic in @I: 32 bits where the counts allow (a 64-bit
 * division is several times the instructions), else 64. The elements and
 * their order are the same.
 */
static bool bn_narrow(size_t count)
{
	return count <= UINT32_MAX - TP_BLOCK;
}

/* The channel of element @i of an n x c x hw tensor. */
template <typename I>
static __device__ uint32_t bn_channel(size_t i, uint32_t c, uint32_t hw)
{
	return (uint32_t)((I)i / hw % c);
}

/*
 * Per image and channel (@segs of them, image-major, hw elements each):
 * the sum of x, of (x - mean)^2, or (backward) of dy into @s and of
 * dy xhat into @s2.
 */
static __global__ void bn_seg_kernel(const float *x, const float *dy,
				     const float *mean, const float *invstd,
				     double *s, double *s2, size_t segs,
				     uint32_t c, uint32_t hw, enum bn_seg what)
{
	size_t seg = (size_t)blockIdx.x * BN_SEG_WARPS + threadIdx.x / 32;
	uint32_t lane = threadIdx.x % 32, ch;
	const float *xs, *dys;
	double a = 0, b = 0, mu = 0, is = 0;

	if (seg >= segs)
		return;
	ch = (uint32_t)(seg % c);
	xs = x + seg * hw;
	dys = dy ? dy + seg * hw : NULL;
	if (what != SEG_X)
		mu = mean[ch];
	if (what == SEG_BWD)
		is = invstd[ch];
	for (uint32_t j = lane; j < hw; j += 32) {
		double d = xs[j] - mu;

		if (what == SEG_X) {
			a += xs[j];
		} else if (what == SEG_DEVIATION) {
			a += d * d;
		} else {
			a += dys[j];
			b += dys[j] * d * is;
		}
	}
	a = tp_warp_sum(a);
	if (what == SEG_BWD)
		b = tp_warp_sum(b);
	if (lane)
		return;
	s[seg] = a;
	if (what == SEG_BWD)
		s2[seg] = b;
}

/* What the carry makes of a channel's sum once its last image is in. */
enum bn_finish { FIN_NONE, FIN_MEAN, FIN_INVSTD };

/*
 * acc[ch] += the @n images' sums in order, from 0 where @first (acc2
 * likewise from s2, where given); then, per @fin, the statistic over @m
 * elements, as cpu_batchnorm.c makes it.
 */
static __global__ void bn_carry_kernel(const double *s, float *acc,
				       const double *s2, float *acc2,
				       size_t n, uint32_t c, bool first,
				       enum bn_finish fin, double m, float eps)
{
	uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x;
	float a, b;

	if (ch >= c)
		return;
	a = first ? 0.0f : acc[ch];
	b = first || !acc2 ? 0.0f : acc2[ch];
#pragma unroll 8
	for (size_t i = 0; i < n; i++) {
		a = (float)((double)a + s[i * c + ch]);
		if (acc2)
			b = (float)((double)b + s2[i * c + ch]);
	}
	if (fin == FIN_MEAN)
		a = (float)(a / m);
	else if (fin == FIN_INVSTD)
		a = (float)(1.0 / sqrt(a / m + eps));
	acc[ch] = a;
	if (acc2)
		acc2[ch] = b;
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

static unsigned bn_channel_blocks(uint32_t c)
{
	return (c + BN_CARRY_BLOCK - 1) / BN_CARRY_BLOCK;
}

/*
 * Add @n images of a launch's tensors to the channels' float sums @acc
 * (and @acc2, backward), from 0 where @first, then @fin: the per-image
 * sums in stream-ordered scratch, then the carry.
 */
static int bn_add_images(const struct tp_op_launch *l, const float *x,
			 const float *dy, const float *mean,
			 const float *invstd, float *acc, float *acc2,
			 size_t n, bool first, enum bn_seg what,
			 enum bn_finish fin)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	size_t segs = n * p->c, bytes = segs * sizeof(double);
	cudaStream_t st = TP_STREAM(l);
	double *s = NULL;
	int rc;

	rc = tp_cuda_check(l, cudaMallocAsync((void **)&s, acc2 ? 2 * bytes :
					      bytes, st),
			   "cudaMallocAsync (batch-norm sums)");
	if (rc)
		return rc;
	bn_seg_kernel<<<(unsigned)((segs + BN_SEG_WARPS - 1) / BN_SEG_WARPS),
			32 * BN_SEG_WARPS, 0, st>>>(x, dy, mean, invstd, s,
						    s + segs, segs, p->c, p->hw,
						    what);
	rc = tp_cuda_launched(l, "bn_seg_kernel");
	if (!rc) {
		bn_carry_kernel<<<bn_channel_blocks(p->c), BN_CARRY_BLOCK, 0,
				  st>>>(s, acc, acc2 ? s + segs : NULL, acc2,
					n, p->c, first, fin,
					(double)p->n * p->hw, p->eps);
		rc = tp_cuda_launched(l, "bn_carry_kernel");
	}
	cudaFreeAsync(s, st);
	return rc;
}

/*
 * Pass @pass over @n images of the launch's; @first: from the batch's 0,
 * @last: to its last image, which finishes the pass's statistic.
 */
template <typename I>
static int bn_fwd_pass(const struct tp_op_launch *l, unsigned pass, size_t n,
		       bool first, bool last)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	size_t elems = n * p->c * p->hw;

	if (pass == BN_SUM)
		return bn_add_images(l, TP_IN(l, 0), NULL, NULL, NULL,
				     TP_OUT(l, 1), NULL, n, first, SEG_X,
				     last ? FIN_MEAN : FIN_NONE);
	if (pass == BN_DEVIATION)
		return bn_add_images(l, TP_IN(l, 0), NULL, TP_OUT(l, 1), NULL,
				     TP_OUT(l, 2), NULL, n, first,
				     SEG_DEVIATION,
				     last ? FIN_INVSTD : FIN_NONE);
	bn_apply_kernel<I><<<tp_grid(elems), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_OUT(l, 1),
		TP_OUT(l, 2), TP_OUT(l, 0), p->c, p->hw, elems);
	return tp_cuda_launched(l, "bn_apply_kernel");
}

template <typename I>
static int bn_fwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	int rc = 0;

	if (l->sums)
		return bn_fwd_pass<I>(l, l->pass, l->rows, !l->row0,
				      l->row0 + l->rows == p->n);
	/* part 0 (or a whole run): the statistics over every row */
	if (tp_writes_whole(l)) {
		rc = bn_fwd_pass<I>(l, BN_SUM, p->n, true, true);
		if (!rc)
			rc = bn_fwd_pass<I>(l, BN_DEVIATION, p->n, true, true);
	}
	return rc ? rc : bn_fwd_pass<I>(l, BN_OUTPUT, tp_rows(l, p->n),
					false, false);
}

template <typename I>
static int bn_bwd_dx(const struct tp_op_launch *l, size_t n)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	size_t elems = n * p->c * p->hw;

	bn_bwd_dx_kernel<I><<<tp_grid(elems), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_IN(l, 2), TP_IN(l, 3),
		TP_IN(l, 4), TP_OUT(l, 1), TP_OUT(l, 2), TP_OUT(l, 0), p->c,
		p->hw, (double)p->n * p->hw, elems);
	return tp_cuda_launched(l, "bn_bwd_dx_kernel");
}

/* dgamma and dbeta over @n images, from 0 where @first. */
static int bn_bwd_sums(const struct tp_op_launch *l, size_t n, bool first)
{
	return bn_add_images(l, TP_IN(l, 1), TP_IN(l, 0), TP_IN(l, 3),
			     TP_IN(l, 4), TP_OUT(l, 2), TP_OUT(l, 1), n, first,
			     SEG_BWD, FIN_NONE);
}

template <typename I>
static int bn_bwd(const struct tp_op_launch *l)
{
	const struct tp_batchnorm_params *p = TP_PARAMS(l, tp_batchnorm_params);
	int rc = 0;

	if (l->sums && !l->pass)
		return bn_bwd_sums(l, l->rows, !l->row0);
	/* part 0 (or a whole run): the sums over every row */
	if (!l->sums && tp_writes_whole(l))
		rc = bn_bwd_sums(l, p->n, true);
	return rc ? rc : bn_bwd_dx<I>(l, tp_rows(l, p->n));
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
