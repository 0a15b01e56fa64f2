// SPDX-License-Identifier: MIT
/*
 * CPU 2-D convolution as im2col + GEMM, one image at a time: the column
 * matrix of one image is c*r*s x oh*ow floats, small enough to reuse for
 * every image of the batch. The weight gradient accumulates over images in
 * batch order (beta = 1), the bias gradient likewise, one image's sum at a
 * time, so their summation order is fixed.
 *
 * In parts, an image's output is the same product of the same shapes
 * whatever the part; the weight and bias gradients are part 0's, over the
 * whole batch, or the parts sum them (l->sums), each adding its images in
 * order to what the parts before it left: the same sums in the same order
 * as a whole run.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel.h"

struct conv_geom {
	uint32_t oh, ow;
	size_t crs, ohw, x_img, y_img;
};

static void conv_geom(const struct tp_conv2d_params *p, struct conv_geom *g)
{
	g->oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	g->ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);
	g->crs = (size_t)p->c * p->r * p->s;
	g->ohw = (size_t)g->oh * g->ow;
	g->x_img = (size_t)p->c * p->h * p->w;
	g->y_img = (size_t)p->k * g->ohw;
}

static void im2col(const struct tp_conv2d_params *p,
		   const struct conv_geom *g, const float *x, float *col)
{
	uint32_t ci, kr, ks, oy, ox;

	for (ci = 0; ci < p->c; ci++)
		for (kr = 0; kr < p->r; kr++)
			for (ks = 0; ks < p->s; ks++) {
				size_t row = ((size_t)ci * p->r + kr) * p->s + ks;
				float *dst = col + row * g->ohw;

				for (oy = 0; oy < g->oh; oy++) {
					long iy = (long)oy * p->stride_h - p->pad_h + kr;

					for (ox = 0; ox < g->ow; ox++) {
						long ix = (long)ox * p->stride_w -
							  p->pad_w + ks;
						bool in = iy >= 0 && iy < p->h &&
							  ix >= 0 && ix < p->w;

						*dst++ = in ? x[((size_t)ci * p->h + iy) *
								p->w + ix] : 0.0f;
					}
				}
			}
}

static void col2im(const struct tp_conv2d_params *p,
		   const struct conv_geom *g, const float *col, float *dx)
{
	uint32_t ci, kr, ks, oy, ox;

	memset(dx, 0, g->x_img * sizeof(*dx));
	for (ci = 0; ci < p->c; ci++)
		for (kr = 0; kr < p->r; kr++)
			for (ks = 0; ks < p->s; ks++) {
				size_t row = ((size_t)ci * p->r + kr) * p->s + ks;
				const float *src = col + row * g->ohw;

				for (oy = 0; oy < g->oh; oy++) {
					long iy = (long)oy * p->stride_h - p->pad_h + kr;

					for (ox = 0; ox < g->ow; ox++, src++) {
						long ix = (long)ox * p->stride_w -
							  p->pad_w + ks;

						if (iy >= 0 && iy < p->h &&
						    ix >= 0 && ix < p->w)
							dx[((size_t)ci * p->h + iy) *
							   p->w + ix] += *src;
					}
				}
			}
}

int tp_cpu_conv2d(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	const float *x = TP_IN(l, 0), *w = TP_IN(l, 1);
	float *y = TP_OUT(l, 0), *col;
	size_t i, j, n = tp_rows(l, p->n);
	struct conv_geom g;
	uint32_t k;

	conv_geom(p, &g);
	col = malloc(g.crs * g.ohw * sizeof(*col));
	if (!col)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		float *yi = y + i * g.y_img;

		im2col(p, &g, x + i * g.x_img, col);
		tp_cpu_sgemm(0, 0, p->k, g.ohw, g.crs, 1.0f, w, col, 0.0f, yi);
		if (!p->bias)
			continue;
		for (k = 0; k < p->k; k++)
			for (j = 0; j < g.ohw; j++)
				yi[k * g.ohw + j] += TP_IN(l, 2)[k];
	}
	free(col);
	return 0;
}

/*
 * dW += dy_i col_i^T over images [0, @n) of the launch's, in order, and db
 * += each image's sum per channel; @first: they start at 0 (the batch's
 * image 0).
 */
static void conv_bwd_params(const struct tp_op_launch *l,
			    const struct conv_geom *g, float *col, size_t n,
			    bool first)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1);
	float *dw = TP_OUT(l, 1);
	uint32_t k;
	size_t i, j;

	for (i = 0; i < n; i++) {
		im2col(p, g, x + i * g->x_img, col);
		tp_cpu_sgemm(0, 1, p->k, g->crs, g->ohw, 1.0f,
			     dy + i * g->y_img, col, i || !first ? 1.0f : 0.0f,
			     dw);
	}
	for (k = 0; p->bias && k < p->k; k++) {
		float *db = TP_OUT(l, 2);	/* an output only with a bias */
		float acc = first ? 0.0f : db[k];

		for (i = 0; i < n; i++) {
			const float *dyk = dy + i * g->y_img + k * g->ohw;
			double s = 0;

			for (j = 0; j < g->ohw; j++)
				s += dyk[j];
			acc = (float)((double)acc + s);
		}
		db[k] = acc;
	}
}

int tp_cpu_conv2d_bwd(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	const float *dy = TP_IN(l, 0), *w = TP_IN(l, 2);
	float *dx = TP_OUT(l, 0), *col;
	size_t i, n = tp_rows(l, p->n);
	struct conv_geom g;

	conv_geom(p, &g);
	col = malloc(g.crs * g.ohw * sizeof(*col));
	if (!col)
		return -ENOMEM;
	if (l->sums)
		conv_bwd_params(l, &g, col, n, !l->row0);
	else if (tp_writes_whole(l))
		conv_bwd_params(l, &g, col, p->n, true);
	/* dcol = W^T dy_i, folded back into dx_i */
	for (i = 0; i < n; i++) {
		tp_cpu_sgemm(1, 0, g.crs, g.ohw, p->k, 1.0f, w,
			     dy + i * g.y_img, 0.0f, col);
		col2im(p, &g, col, dx + i * g.x_img);
	}
	free(col);
	return 0;
}
