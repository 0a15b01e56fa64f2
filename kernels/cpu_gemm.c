// SPDX-License-Identifier: MIT
/*
 * CPU linear and (batched) GEMM through CBLAS. The backward products are
 * written once, as the transposes each gradient needs, and the bias
 * gradient sums rows in a fixed order, so every run gives the same bits.
 *
 * A batched GEMM runs in parts along its batch: each product is its own
 * CBLAS call of the same shape whatever the part, so a part gives the
 * whole run's bits.
 */
#include "config.h"

#include <cblas.h>

#include "kernels/kernel.h"

void tp_cpu_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
		  const float *a, const float *b, float beta, float *c)
{
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
		    a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

int tp_cpu_linear(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	float *y = TP_OUT(l, 0);
	uint32_t i, j;

	tp_cpu_sgemm(0, 1, p->n, p->out, p->in, 1.0f, TP_IN(l, 0),
		     TP_IN(l, 1), 0.0f, y);
	if (p->bias) {
		const float *b = TP_IN(l, 2);

		for (i = 0; i < p->n; i++)
			for (j = 0; j < p->out; j++)
				y[(size_t)i * p->out + j] += b[j];
	}
	return 0;
}

int tp_cpu_linear_bwd(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *w = TP_IN(l, 2);
	uint32_t i, j;

	/* dx = dy W, dW = dy^T x */
	tp_cpu_sgemm(0, 0, p->n, p->in, p->out, 1.0f, dy, w, 0.0f,
		     TP_OUT(l, 0));
	tp_cpu_sgemm(1, 0, p->out, p->in, p->n, 1.0f, dy, x, 0.0f,
		     TP_OUT(l, 1));
	if (p->bias) {
		float *db = TP_OUT(l, 2);

		for (j = 0; j < p->out; j++) {
			double s = 0;

			for (i = 0; i < p->n; i++)
				s += dy[(size_t)i * p->out + j];
			db[j] = (float)s;
		}
	}
	return 0;
}

int tp_cpu_gemm(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	size_t sa = (size_t)p->m * p->k, sb = (size_t)p->k * p->n;
	size_t sc = (size_t)p->m * p->n;
	size_t i, batch = tp_rows(l, p->batch);

	for (i = 0; i < batch; i++)
		tp_cpu_sgemm(p->trans_a, p->trans_b, p->m, p->n, p->k,
			     p->alpha, TP_IN(l, 0) + i * sa,
			     TP_IN(l, 1) + i * sb, 0.0f, TP_OUT(l, 0) + i * sc);
	return 0;
}

int tp_cpu_gemm_bwd(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	size_t sa = (size_t)p->m * p->k, sb = (size_t)p->k * p->n;
	size_t sc = (size_t)p->m * p->n;
	int m = p->m, n = p->n, k = p->k, ta = p->trans_a, tb = p->trans_b;
	size_t i, batch = tp_rows(l, p->batch);

	for (i = 0; i < batch; i++) {
		const float *dc = TP_IN(l, 0) + i * sc;
		const float *a = TP_IN(l, 1) + i * sa;
		const float *b = TP_IN(l, 2) + i * sb;
		float *da = TP_OUT(l, 0) + i * sa, *db = TP_OUT(l, 1) + i * sb;

		/* dop(A) = alpha dC op(B)^T; dop(B) = alpha op(A)^T dC */
		if (!ta)
			tp_cpu_sgemm(0, !tb, m, k, n, p->alpha, dc, b, 0, da);
		else
			tp_cpu_sgemm(tb, 1, k, m, n, p->alpha, b, dc, 0, da);
		if (!tb)
			tp_cpu_sgemm(!ta, 0, k, n, m, p->alpha, a, dc, 0, db);
		else
			tp_cpu_sgemm(1, ta, n, k, m, p->alpha, dc, a, 0, db);
	}
	return 0;
}
