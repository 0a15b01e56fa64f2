// SPDX-License-Identifier: MIT
/*
 * CPU max, average and global-average pooling. Max takes the first
 * maximum in window scan order, and its backward op finds it again from
 * x, so the gradient goes to one element per window as cuDNN's
 * deterministic max pooling does. Average counts padding (divides by r*s).
 * Every plane is computed on its own, so a part (rows: images) computes
 * its planes, the pointers at its first image.
 */
#include "config.h"

#include <string.h>

#include "kernels/kernel.h"

/* The window of output (@oy, @ox), clipped to the input. */
struct win {
	long top, bottom, left, right;
};

static struct win window(const struct tp_pool_params *p, uint32_t oy,
			 uint32_t ox)
{
	struct win w;

	w.top = (long)oy * p->stride_h - p->pad_h;
	w.left = (long)ox * p->stride_w - p->pad_w;
	w.bottom = w.top + p->r;
	w.right = w.left + p->s;
	if (w.top < 0)
		w.top = 0;
	if (w.left < 0)
		w.left = 0;
	if (w.bottom > p->h)
		w.bottom = p->h;
	if (w.right > p->w)
		w.right = p->w;
	return w;
}

static size_t argmax(const struct tp_pool_params *p, const float *x,
		     struct win w)
{
	size_t best = (size_t)w.top * p->w + w.left;
	long iy, ix;

	for (iy = w.top; iy < w.bottom; iy++)
		for (ix = w.left; ix < w.right; ix++)
			if (x[(size_t)iy * p->w + ix] > x[best])
				best = (size_t)iy * p->w + ix;
	return best;
}

int tp_cpu_maxpool(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
	size_t plane, nplanes = tp_rows(l, p->n) * p->c;
	uint32_t oy, ox;

	for (plane = 0; plane < nplanes; plane++) {
		const float *x = TP_IN(l, 0) + plane * p->h * p->w;
		float *y = TP_OUT(l, 0) + plane * oh * ow;

		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++)
				y[oy * ow + ox] =
					x[argmax(p, x, window(p, oy, ox))];
	}
	return 0;
}

int tp_cpu_maxpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
	size_t plane, nplanes = tp_rows(l, p->n) * p->c;
	uint32_t oy, ox;

	memset(TP_OUT(l, 0), 0, nplanes * p->h * p->w * sizeof(float));
	for (plane = 0; plane < nplanes; plane++) {
		const float *dy = TP_IN(l, 0) + plane * oh * ow;
		const float *x = TP_IN(l, 1) + plane * p->h * p->w;
		float *dx = TP_OUT(l, 0) + plane * p->h * p->w;

		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++)
				dx[argmax(p, x, window(p, oy, ox))] +=
					dy[oy * ow + ox];
	}
	return 0;
}

int tp_cpu_avgpool(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
	size_t plane, nplanes = tp_rows(l, p->n) * p->c;
	float inv = 1.0f / ((float)p->r * p->s);
	long iy, ix;
	uint32_t oy, ox;

	for (plane = 0; plane < nplanes; plane++) {
		const float *x = TP_IN(l, 0) + plane * p->h * p->w;
		float *y = TP_OUT(l, 0) + plane * oh * ow;

		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++) {
				struct win w = window(p, oy, ox);
				float s = 0;

				for (iy = w.top; iy < w.bottom; iy++)
					for (ix = w.left; ix < w.right; ix++)
						s += x[(size_t)iy * p->w + ix];
				y[oy * ow + ox] = s * inv;
			}
	}
	return 0;
}

int tp_cpu_avgpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_pool_params *p = TP_PARAMS(l, tp_pool_params);
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
	size_t plane, nplanes = tp_rows(l, p->n) * p->c;
	float inv = 1.0f / ((float)p->r * p->s);
	long iy, ix;
	uint32_t oy, ox;

	memset(TP_OUT(l, 0), 0, nplanes * p->h * p->w * sizeof(float));
	for (plane = 0; plane < nplanes; plane++) {
		const float *dy = TP_IN(l, 0) + plane * oh * ow;
		float *dx = TP_OUT(l, 0) + plane * p->h * p->w;

		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++) {
				struct win w = window(p, oy, ox);
				float g = dy[oy * ow + ox] * inv;

				for (iy = w.top; iy < w.bottom; iy++)
					for (ix = w.left; ix < w.right; ix++)
						dx[(size_t)iy * p->w + ix] += g;
			}
	}
	return 0;
}

int tp_cpu_global_avgpool(const struct tp_op_launch *l)
{
	const struct tp_gap_params *p = TP_PARAMS(l, tp_gap_params);
	size_t plane, j, nplanes = tp_rows(l, p->n) * p->c;

	for (plane = 0; plane < nplanes; plane++) {
		const float *x = TP_IN(l, 0) + plane * p->hw;
		double s = 0;

		for (j = 0; j < p->hw; j++)
			s += x[j];
		TP_OUT(l, 0)[plane] = (float)(s / p->hw);
	}
	return 0;
}

int tp_cpu_global_avgpool_bwd(const struct tp_op_launch *l)
{
	const struct tp_gap_params *p = TP_PARAMS(l, tp_gap_params);
	size_t plane, j, nplanes = tp_rows(l, p->n) * p->c;

	for (plane = 0; plane < nplanes; plane++) {
		float g = TP_IN(l, 0)[plane] / (float)p->hw;

		for (j = 0; j < p->hw; j++)
			TP_OUT(l, 0)[plane * p->hw + j] = g;
	}
	return 0;
}
