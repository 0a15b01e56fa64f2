// SPDX-License-Identifier: MIT
/*
 * CPU linear and (batched) GEMM through CBLAS. The backward products are
 * written once, as the transposes each gradient needs, and the bias
 * gradient sums rows in a fixed order, so every run gives the same bits.
 *
 * A batched GEMM runs in parts along its batch: each product is its own
 * CBLAS call of the same shape whatever the part, so a part gives the
 * whole run's bits. A linear op runs in parts along its rows: its product
 * for rows is checked row-invariant per shape and row count (batching.h);
 * the weight and bias gradients are part 0's, over every row, the call a
 * whole run makes.
 */
#include "config.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/batching.h"
#include "kernels/kernel.h"

void tp_cpu_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
		  const float *a, const float *b, float beta, float *c)
{
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
		    a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

/* The shape of a product by rows, as batching.h keys it. */
struct rows_key {
	char device[4];
	int trans_b, n, k;
};

/* C[rows x n] = A[rows x k] op(B), one row at a time. */
static void rows_single(int tb, int rows, int n, int k, const float *a,
			const float *b, float *c)
{
	for (int i = 0; i < rows; i++)
		tp_cpu_sgemm(0, tb, 1, n, k, 1.0f, a + (size_t)i * k, b, 0.0f,
			     c + (size_t)i * n);
}

/*
 * C[rows x n] = A[rows x k] op(B), each row with the bits it gets alone:
 * as one product where that many rows were checked to (batching.h), else
 * row by row; the first product of a shape and row count is checked on
 * rows 0, 1 and the last, and redone row by row when one differs.
 */
static void rows_sgemm(int tb, int rows, int n, int k, const float *a,
		       const float *b, float *c)
{
	struct rows_key key;
	uint32_t pick[3];
	unsigned np;
	float *one;
	bool same = true;
	enum tp_batching st;

	memset(&key, 0, sizeof(key));
	memcpy(key.device, "cpu", 4);
	key.trans_b = tb;
	key.n = n;
	key.k = k;
	st = tp_batching_of(&key, sizeof(key), (uint32_t)rows);
	if (st == TP_BATCHING_SINGLE || rows == 1) {
		rows_single(tb, rows, n, k, a, b, c);
		return;
	}
	tp_cpu_sgemm(0, tb, rows, n, k, 1.0f, a, b, 0.0f, c);
	if (st == TP_BATCHING_CHECKED)
		return;
	one = malloc((size_t)n * sizeof(*one));
	if (!one)
		return;		/* checked next time */
	np = tp_batching_picks((uint32_t)rows, pick);
	for (unsigned q = 0; q < np && same; q++) {
		tp_cpu_sgemm(0, tb, 1, n, k, 1.0f, a + (size_t)pick[q] * k, b,
			     0.0f, one);
		same = !memcmp(one, c + (size_t)pick[q] * n,
			       (size_t)n * sizeof(*one));
	}
	free(one);
	tp_batching_note(&key, sizeof(key), (uint32_t)rows, same);
	if (!same)
		rows_single(tb, rows, n, k, a, b, c);
}

int tp_cpu_linear(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	size_t i, j, rows = tp_rows(l, p->n);
	float *y = TP_OUT(l, 0);

	rows_sgemm(1, (int)rows, p->out, p->in, TP_IN(l, 0), TP_IN(l, 1), y);
	if (p->bias) {
		const float *b = TP_IN(l, 2);

		for (i = 0; i < rows; i++)
			for (j = 0; j < p->out; j++)
				y[i * p->out + j] += b[j];
	}
	return 0;
}

int tp_cpu_linear_bwd(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *w = TP_IN(l, 2);
	uint32_t i, j;

	/* dx = dy W for the rows; dW = dy^T x over all of them (part 0) */
	rows_sgemm(0, (int)tp_rows(l, p->n), p->in, p->out, dy, w,
		   TP_OUT(l, 0));
	if (!tp_writes_whole(l))
		return 0;
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
