// SPDX-License-Identifier: MIT
/*
 * CUDA linear and (batched) GEMM through cuBLAS. tpager's matrices are
 * row-major; cuBLAS is column-major, where a row-major X is X^T, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands
 * swapped and the same leading dimensions as CBLAS takes.
 *
 * cuBLAS gives the same bits on every run on one GPU model (it uses no
 * atomics unless allowed), and FP32 math stays FP32 unless the launch
 * allows TF32 (l->math, vmm.math: CUBLAS_TF32_TENSOR_OP_MATH).
 *
 * A batched GEMM runs in parts along its batch, each part a strided
 * batch of its products; a linear op along its rows, each part a product
 * of its rows (the weight and bias gradients are part 0's, over every
 * row: a whole run's calls). cuBLAS promises the same bits for the same
 * call, not that a product or a row comes out the same in a call of
 * another size (its heuristics may pick another kernel, or split the
 * sums), so each shape is checked per count as batching.h says: a shape
 * that differs runs one product or row at a time from then on, and the
 * launch that found it is redone so before anything reads it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "kernels/batching.h"
#include "kernels/cuda_util.h"

static cublasHandle_t blas;

static int blas_check(const struct tp_op_launch *l, cublasStatus_t s,
		      const char *what)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	return tp_cuda_fail(l, what, cublasGetStatusString(s));
}

int tp_cuda_sgemm(const struct tp_op_launch *l, int trans_a, int trans_b,
		  int m, int n, int k, float alpha, const float *a,
		  long long sa, const float *b, long long sb, float *c,
		  long long sc, int batch)
{
	const float beta = 0.0f;
	cublasStatus_t s;
	int rc;

	tp_cuda_lock();
	if (!blas) {
		rc = blas_check(l, cublasCreate(&blas), "cublasCreate");
		if (rc)
			goto out;
	}
	rc = blas_check(l, cublasSetStream(blas, TP_STREAM(l)),
			"cublasSetStream");
	if (rc)
		goto out;
	rc = blas_check(l, cublasSetMathMode(blas, l->math == TP_MATH_TF32 ?
					     CUBLAS_TF32_TENSOR_OP_MATH :
					     CUBLAS_DEFAULT_MATH),
			"cublasSetMathMode");
	if (rc)
		goto out;
	s = cublasSgemmStridedBatched(blas,
			trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
			trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
			n, m, k, &alpha, b, trans_b ? k : n, sb,
			a, trans_a ? m : k, sa, &beta, c, n, sc, batch);
	rc = blas_check(l, s, "cublasSgemmStridedBatched");
out:
	tp_cuda_unlock();
	return rc;
}

/* --- batch invariance (batching.h) ----------------------------------- */

/* One product of a batch, or one row of a linear op's (m = 1). */
struct gemm_shape {
	int ta, tb, m, n, k;
	float alpha;
};

/*
 * @count products of @g at strides @sa, @sb, @sc; with @rows, the rows of
 * one product (B shared), run as one product of @count rows.
 */
struct gemm_run {
	struct gemm_shape g;
	const float *a, *b;
	float *c;
	long long sa, sb, sc;
	bool rows;
};

/* What batching.h knows a shape by. */
struct gemm_key {
	char device[8];
	struct gemm_shape g;
	int rows;
	int math;			/* enum tp_op_math */
};

static int run_all(const struct tp_op_launch *l, const struct gemm_run *r,
		   int count)
{
	const struct gemm_shape *g = &r->g;

	if (r->rows)
		return tp_cuda_sgemm(l, g->ta, g->tb, count, g->n, g->k,
				     g->alpha, r->a, 0, r->b, 0, r->c, 0, 1);
	return tp_cuda_sgemm(l, g->ta, g->tb, g->m, g->n, g->k, g->alpha, r->a,
			     r->sa, r->b, r->sb, r->c, r->sc, count);
}

/* Product @i alone into @c (its place when NULL). */
static int run_one(const struct tp_op_launch *l, const struct gemm_run *r,
		   int i, float *c)
{
	const struct gemm_shape *g = &r->g;

	return tp_cuda_sgemm(l, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
			     r->a + i * r->sa, 0, r->b + i * r->sb, 0,
			     c ? c : r->c + i * r->sc, 0, 1);
}

/* A run and its launch, as tp_batching_run() hands them back. */
struct gemm_job {
	const struct tp_op_launch *l;
	const struct gemm_run *r;
};

static int job_all(void *priv, uint32_t count)
{
	const struct gemm_job *j = priv;

	return run_all(j->l, j->r, (int)count);
}

static int job_single(void *priv, uint32_t count)
{
	const struct gemm_job *j = priv;
	int rc = 0;

	for (uint32_t i = 0; i < count && !rc; i++)
		rc = run_one(j->l, j->r, (int)i, NULL);
	return rc;
}

/* Products @pick of the run's output against each computed alone. */
static int job_compare(void *priv, const uint32_t *pick, unsigned np,
		       bool *same)
{
	const struct gemm_job *j = priv;
	const struct tp_op_launch *l = j->l;
	size_t bytes = (size_t)j->r->g.m * j->r->g.n * sizeof(float);
	float *scratch = NULL;
	int rc;

	*same = true;
	rc = tp_cuda_check(l, cudaMallocAsync((void **)&scratch, bytes,
					      TP_STREAM(l)),
			   "cudaMallocAsync (batch invariance check)");
	for (unsigned q = 0; q < np && !rc && *same; q++) {
		rc = run_one(l, j->r, (int)pick[q], scratch);
		if (!rc)
			rc = tp_cuda_same_bytes(l, scratch,
						j->r->c + pick[q] * j->r->sc,
						bytes, same);
	}
	if (scratch)
		cudaFreeAsync(scratch, TP_STREAM(l));
	return rc;
}

static const struct tp_batching_ops gemm_ops = {
	.all = job_all, .single = job_single, .compare = job_compare,
};

/*
 * @count of the op's @whole products (or rows) of @r, with the bits of a
 * whole run (batching.h).
 */
static int products(const struct tp_op_launch *l, const struct gemm_run *r,
		    int count, int whole)
{
	struct gemm_job j = { l, r };
	struct gemm_key key;

	memset(&key, 0, sizeof(key));
	memcpy(key.device, "cublas", 7);
	key.g = r->g;
	key.rows = r->rows;
	key.math = (int)l->math;
	/* Rows one at a time would cost a GPU's step many times over. */
	return tp_batching_run(&key, sizeof(key), (uint32_t)count,
			       (uint32_t)whole, 0, &gemm_ops, &j);
}

/* C[rows x n] = A[rows x k] op(B) for a linear op's rows. */
static int rows_sgemm(const struct tp_op_launch *l, int tb, int rows,
		      int whole, int n, int k, const float *a, const float *b,
		      float *c)
{
	const struct gemm_run r = {
		.g = { 0, tb, 1, n, k, 1.0f },
		.a = a, .b = b, .c = c, .sa = k, .sb = 0, .sc = n,
		.rows = true,
	};

	return products(l, &r, rows, whole);
}

int tp_cuda_linear(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	int rows = (int)tp_rows(l, p->n);
	int rc;

	rc = rows_sgemm(l, 1, rows, (int)p->n, p->out, p->in, TP_IN(l, 0),
			TP_IN(l, 1), TP_OUT(l, 0));
	if (rc || !p->bias)
		return rc;
	return tp_cuda_check(l, tp_cuda_bias_rows(TP_OUT(l, 0), TP_IN(l, 2),
						  rows, p->out, TP_STREAM(l)),
			     "bias_rows");
}

int tp_cuda_linear_bwd(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *w = TP_IN(l, 2);
	int rc;

	/* dx = dy W for the rows; dW = dy^T x over all of them (part 0) */
	rc = rows_sgemm(l, 0, (int)tp_rows(l, p->n), (int)p->n, p->in, p->out,
			dy, w, TP_OUT(l, 0));
	if (rc || !tp_writes_whole(l))
		return rc;
	rc = tp_cuda_sgemm(l, 1, 0, p->out, p->in, p->n, 1.0f, dy, 0, x, 0,
			   TP_OUT(l, 1), 0, 1);
	if (rc || !p->bias)
		return rc;
	return tp_cuda_check(l, tp_cuda_col_sum(dy, TP_OUT(l, 2), p->n,
						p->out, TP_STREAM(l)),
			     "col_sum");
}

int tp_cuda_gemm(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	const struct gemm_run r = {
		.g = { p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha },
		.a = TP_IN(l, 0), .sa = (long long)p->m * p->k,
		.b = TP_IN(l, 1), .sb = (long long)p->k * p->n,
		.c = TP_OUT(l, 0), .sc = (long long)p->m * p->n,
	};

	return products(l, &r, (int)tp_rows(l, p->batch), (int)p->batch);
}

int tp_cuda_gemm_bwd(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	long long sa = (long long)p->m * p->k, sb = (long long)p->k * p->n;
	long long sc = (long long)p->m * p->n;
	int m = p->m, n = p->n, k = p->k, ta = p->trans_a, tb = p->trans_b;
	int count = (int)tp_rows(l, p->batch);
	const float *dc = TP_IN(l, 0), *a = TP_IN(l, 1), *b = TP_IN(l, 2);
	float *da = TP_OUT(l, 0), *db = TP_OUT(l, 1);
	struct gemm_run r;
	int rc;

	/* the same products as tp_cpu_gemm_bwd(), all batches at once */
	if (!ta)
		r = (struct gemm_run){ .g = { 0, !tb, m, k, n, p->alpha },
				       .a = dc, .sa = sc, .b = b, .sb = sb,
				       .c = da, .sc = sa };
	else
		r = (struct gemm_run){ .g = { tb, 1, k, m, n, p->alpha },
				       .a = b, .sa = sb, .b = dc, .sb = sc,
				       .c = da, .sc = sa };
	rc = products(l, &r, count, (int)p->batch);
	if (rc)
		return rc;
	if (!tb)
		r = (struct gemm_run){ .g = { !ta, 0, k, n, m, p->alpha },
				       .a = a, .sa = sa, .b = dc, .sb = sc,
				       .c = db, .sc = sb };
	else
		r = (struct gemm_run){ .g = { 1, ta, n, k, m, p->alpha },
				       .a = dc, .sa = sc, .b = a, .sb = sa,
				       .c = db, .sc = sb };
	return products(l, &r, count, (int)p->batch);
}
