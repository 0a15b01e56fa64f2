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
#include <errno.h>
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

/* C[rows x n] = A[rows x k] op(B), a linear op's rows. */
struct rows_run {
	int tb, n, k;
	const float *a, *b;
	float *c;
};

static int rows_all(void *priv, uint32_t rows)
{
	const struct rows_run *r = priv;

	tp_cpu_sgemm(0, r->tb, (int)rows, r->n, r->k, 1.0f, r->a, r->b, 0.0f,
		     r->c);
	return 0;
}

static int rows_single(void *priv, uint32_t rows)
{
	const struct rows_run *r = priv;

	for (uint32_t i = 0; i < rows; i++)
		tp_cpu_sgemm(0, r->tb, 1, r->n, r->k, 1.0f,
			     r->a + (size_t)i * r->k, r->b, 0.0f,
			     r->c + (size_t)i * r->n);
	return 0;
}

static int rows_compare(void *priv, const uint32_t *pick, unsigned np,
			bool *same)
{
	const struct rows_run *r = priv;
	float *one = malloc((size_t)r->n * sizeof(*one));

	if (!one)
		return -ENOMEM;
	*same = true;
	for (unsigned q = 0; q < np && *same; q++) {
		tp_cpu_sgemm(0, r->tb, 1, r->n, r->k, 1.0f,
			     r->a + (size_t)pick[q] * r->k, r->b, 0.0f, one);
		*same = !memcmp(one, r->c + (size_t)pick[q] * r->n,
				(size_t)r->n * sizeof(*one));
	}
	free(one);
	return 0;
}

static const struct tp_batching_ops rows_ops = {
	.all = rows_all, .single = rows_single, .compare = rows_compare,
};

/*
 * C[rows x n] = A[rows x k] op(B) for @rows of the op's @whole, with a
 * whole run's bits (batching.h).
 */
static int rows_sgemm(int tb, int rows, int whole, int n, int k,
		      const float *a, const float *b, float *c)
{
	struct rows_run r = { tb, n, k, a, b, c };
	struct rows_key key;

	memset(&key, 0, sizeof(key));
	memcpy(key.device, "cpu", 4);
	key.trans_b = tb;
	key.n = n;
	key.k = k;
	/* On the CPU a row alone costs little: every run can split. */
	return tp_batching_run(&key, sizeof(key), (uint32_t)rows,
			       (uint32_t)whole, TP_BATCHING_ALONE, &rows_ops,
			       &r);
}

int tp_cpu_linear(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	size_t i, j, rows = tp_rows(l, p->n);
	float *y = TP_OUT(l, 0);
	int ret;

	ret = rows_sgemm(1, (int)rows, (int)p->n, p->out, p->in, TP_IN(l, 0),
			 TP_IN(l, 1), y);
	if (ret)
		return ret;
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
	int ret;

	/* dx = dy W for the rows; dW = dy^T x over all of them (part 0) */
	ret = rows_sgemm(0, (int)tp_rows(l, p->n), (int)p->n, p->in, p->out,
			 dy, w, TP_OUT(l, 0));
	if (ret || !tp_writes_whole(l))
		return ret;
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
