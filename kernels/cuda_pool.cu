// SPDX-License-Identifier: MIT
/*
 * CUDA max, average and global-average pooling, as cpu_pool.c computes
 * them: max takes the first maximum in window scan order, and its backward
 * op finds it again from x. The backward ops gather: one thread per input
 * element sums, over the windows that hold it in (oy, ox) order, what the
 * CPU's scatter adds to it in the same order, so no atomics are needed.
 *
 * Every plane is computed on its own, one thread per element, so a part
 * of a split run (rows: images) gives a whole run's bits whatever the
 * batch; cuDNN's pooling makes no such promise.
 */
#include "kernels/cuda_launch.cuh"

/* The window of output (@oy, @ox), clipped to the input. */
struct win {
	long top, bottom, left, right;
};

static __device__ struct win window(const struct tp_pool_params &p,
				    uint32_t oy, uint32_t ox)
{
	struct win w;

	w.top = (long)oy * p.stride_h - p.pad_h;
	w.left = (long)ox * p.stride_w - p.pad_w;
	w.bottom = w.top + p.r;
	w.right = w.left + p.s;
	if (w.top < 0)
		w.top = 0;
	if (w.left < 0)
		w.left = 0;
	if (w.bottom > p.h)
		w.bottom = p.h;
	if (w.right > p.w)
		w.right = p.w;
	return w;
}

static __device__ size_t argmax(const struct tp_pool_params &p,
				const float *x, struct win w)
{
	size_t best = (size_t)w.top * p.w + w.left;

	for (long iy = w.top; iy < w.bottom; iy++)
		for (long ix = w.left; ix < w.right; ix++)
			if (x[(size_t)iy * p.w + ix] > x[best])
				best = (size_t)iy * p.w + ix;
	return best;
}

/* The outputs whose window holds input row (or column) @i: [*lo, *hi]. */
static __device__ void covering(long i, uint32_t r, uint32_t stride,
				uint32_t pad, uint32_t out, long *lo, long *hi)
{
	long a = i + pad - r + 1;

	*lo = a <= 0 ? 0 : (a + stride - 1) / stride;
	*hi = (i + pad) / stride;
	if (*hi > (long)out - 1)
		*hi = (long)out - 1;
}

/* Where output @i lies: its plane and position. */
#define POOL_OUT(i, oh, ow, plane, oy, ox) \
	size_t plane = (i) / ((size_t)(oh) * (ow)); \
	uint32_t oy = (uint32_t)((i) / (ow) % (oh)); \
	uint32_t ox = (uint32_t)((i) % (ow))

static __global__ void maxpool_kernel(const float *x, float *y,
				      struct tp_pool_params p, uint32_t oh,
				      uint32_t ow, size_t n)
{
	TP_FOR_EACH(i, n) {
		POOL_OUT(i, oh, ow, plane, oy, ox);
		const float *xp = x + plane * p.h * p.w;

		y[i] = xp[argmax(p, xp, window(p, oy, ox))];
	}
}

static __global__ void avgpool_kernel(const float *x, float *y,
				      struct tp_pool_params p, uint32_t oh,
				      uint32_t ow, float inv, size_t n)
{
	TP_FOR_EACH(i, n) {
		POOL_OUT(i, oh, ow, plane, oy, ox);
		const float *xp = x + plane * p.h * p.w;
		struct win w = window(p, oy, ox);
		float s = 0;

		for (long iy = w.top; iy < w.bottom; iy++)
			for (long ix = w.left; ix < w.right; ix++)
				s += xp[(size_t)iy * p.w + ix];
		y[i] = s * inv;
	}
}

/*
 * dx of input element @i: the dy of every window holding it, for max
 * pooling only those whose maximum it is, for average pooling each
 * times @inv (rounded before the sum, as the CPU does).
 */
static __global__ void pool_bwd_kernel(const float *dy, const float *x,
				       float *dx, struct tp_pool_params p,
				       uint32_t oh, uint32_t ow, float inv,
				       bool is_max, size_t n)
{
	TP_FOR_EACH(i, n) {
		size_t hw = (size_t)p.h * p.w, plane = i / hw, at = i % hw;
		const float *dyp = dy + plane * oh * ow;
		const float *xp = is_max ? x + plane * hw : NULL;
		long y0, y1, x0, x1;
		float acc = 0;

		covering((long)(at / p.w), p.r, p.stride_h, p.pad_h, oh, &y0,
			 &y1);
		covering((long)(at % p.w), p.s, p.stride_w, p.pad_w, ow, &x0,
			 &x1);
		for (long oy = y0; oy <= y1; oy++)
			for (long ox = x0; ox <= x1; ox++) {
				float g = dyp[(size_t)oy * ow + ox];

				if (!is_max)
					acc += __fmul_rn(g, inv);
				else if (argmax(p, xp, window(p, oy, ox)) == at)
					acc += g;
			}
		dx[i] = acc;
	}
}

/* One thread per plane: the CPU's sum, in double, in the same order. */
static __global__ void gap_kernel(const float *x, float *y, uint32_t hw,
				  size_t planes)
{
	TP_FOR_EACH(i, planes) {
		double s = 0;

		for (uint32_t j = 0; j < hw; j++)
			s += x[i * hw + j];
		y[i] = (float)(s / hw);
	}
}

static __global__ void gap_bwd_kernel(const float *dy, float *dx,
				      uint32_t hw, size_t n)
{
	TP_FOR_EACH(i, n)
		dx[i] = dy[i / hw] / (float)hw;
}

static uint32_t pool_oh(const struct tp_pool_params *p)
{
	return tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
}

static uint32_t pool_ow(const struct tp_pool_params *p)
{
	return tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
}

/* The average counts padding: divides by r*s. */
static float pool_inv(const struct tp_pool_params *p)
{
	return 1.0f / ((float)p->r * p->s);
}

extern "C" int tp_cuda_maxpool(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = pool_oh(p), ow = pool_ow(p);
	size_t n = tp_rows(l, p->n) * p->c * oh * ow;

	maxpool_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), *p, oh, ow, n);
	return tp_cuda_launched(l, "maxpool_kernel");
}

extern "C" int tp_cuda_maxpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	size_t n = tp_rows(l, p->n) * p->c * p->h * p->w;

	pool_bwd_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_IN(l, 1), TP_OUT(l, 0), *p, pool_oh(p),
		pool_ow(p), 0.0f, true, n);
	return tp_cuda_launched(l, "pool_bwd_kernel (max)");
}

extern "C" int tp_cuda_avgpool(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = pool_oh(p), ow = pool_ow(p);
	size_t n = tp_rows(l, p->n) * p->c * oh * ow;

	avgpool_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), *p, oh, ow, pool_inv(p), n);
	return tp_cuda_launched(l, "avgpool_kernel");
}

extern "C" int tp_cuda_avgpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	size_t n = tp_rows(l, p->n) * p->c * p->h * p->w;

	pool_bwd_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), NULL, TP_OUT(l, 0), *p, pool_oh(p), pool_ow(p),
		pool_inv(p), false, n);
	return tp_cuda_launched(l, "pool_bwd_kernel (average)");
}

extern "C" int tp_cuda_global_avgpool(const struct tp_op_launch *l)
{
	const struct tp_gap_params *p = TP_PARAMS(l, tp_gap_params);
	size_t planes = tp_rows(l, p->n) * p->c;

	gap_kernel<<<tp_grid(planes), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), p->hw, planes);
	return tp_cuda_launched(l, "gap_kernel");
}

extern "C" int tp_cuda_global_avgpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_gap_params *p = TP_PARAMS(l, tp_gap_params);
	size_t n = tp_rows(l, p->n) * p->c * p->hw;

	gap_bwd_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), TP_OUT(l, 0), p->hw, n);
	return tp_cuda_launched(l, "gap_bwd_kernel");
}
