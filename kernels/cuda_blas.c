// SPDX-License-Identifier: MIT
/*
 * CUDA linear and (batched) GEMM through cuBLAS. tpager's matrices are
 * row-major; cuBLAS is column-major, where a row-major X is X^T, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands
 * swapped and the same leading dimensions as CBLAS takes.
 *
 * cuBLAS gives the same bits on every run on one GPU model (it uses no
 * atomics unless allowed), and FP32 math stays FP32 (TF32 is opt-in).
 */
#include "config.h"

#include <errno.h>

#include <cublas_v2.h>

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

int tp_cuda_linear(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	int rc;

	rc = tp_cuda_sgemm(l, 0, 1, p->n, p->out, p->in, 1.0f, TP_IN(l, 0), 0,
			   TP_IN(l, 1), 0, TP_OUT(l, 0), 0, 1);
	if (rc || !p->bias)
		return rc;
	return tp_cuda_check(l, tp_cuda_bias_rows(TP_OUT(l, 0), TP_IN(l, 2),
						  p->n, p->out, TP_STREAM(l)),
			     "bias_rows");
}

int tp_cuda_linear_bwd(const struct tp_op_launch *l)
{
	const struct tp_linear_params *p = TP_PARAMS(l, tp_linear_params);
	const float *dy = TP_IN(l, 0), *x = TP_IN(l, 1), *w = TP_IN(l, 2);
	int rc;

	/* dx = dy W, dW = dy^T x */
	rc = tp_cuda_sgemm(l, 0, 0, p->n, p->in, p->out, 1.0f, dy, 0, w, 0,
			   TP_OUT(l, 0), 0, 1);
	if (!rc)
		rc = tp_cuda_sgemm(l, 1, 0, p->out, p->in, p->n, 1.0f, dy, 0,
				   x, 0, TP_OUT(l, 1), 0, 1);
	if (rc || !p->bias)
		return rc;
	return tp_cuda_check(l, tp_cuda_col_sum(dy, TP_OUT(l, 2), p->n,
						p->out, TP_STREAM(l)),
			     "col_sum");
}

int tp_cuda_gemm(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	long long sa = (long long)p->m * p->k, sb = (long long)p->k * p->n;
	long long sc = (long long)p->m * p->n;

	return tp_cuda_sgemm(l, p->trans_a, p->trans_b, p->m, p->n, p->k,
			     p->alpha, TP_IN(l, 0), sa, TP_IN(l, 1), sb,
			     TP_OUT(l, 0), sc, p->batch);
}

int tp_cuda_gemm_bwd(const struct tp_op_launch *l)
{
	const struct tp_gemm_params *p = TP_PARAMS(l, tp_gemm_params);
	long long sa = (long long)p->m * p->k, sb = (long long)p->k * p->n;
	long long sc = (long long)p->m * p->n;
	int m = p->m, n = p->n, k = p->k, ta = p->trans_a, tb = p->trans_b;
	const float *dc = TP_IN(l, 0), *a = TP_IN(l, 1), *b = TP_IN(l, 2);
	float *da = TP_OUT(l, 0), *db = TP_OUT(l, 1);
	int rc;

	/* the same products as tp_cpu_gemm_bwd(), all batches at once */
	if (!ta)
		rc = tp_cuda_sgemm(l, 0, !tb, m, k, n, p->alpha, dc, sc, b, sb,
				   da, sa, p->batch);
	else
		rc = tp_cuda_sgemm(l, tb, 1, k, m, n, p->alpha, b, sb, dc, sc,
				   da, sa, p->batch);
	if (rc)
		return rc;
	if (!tb)
		return tp_cuda_sgemm(l, !ta, 0, k, n, m, p->alpha, a, sa, dc,
				     sc, db, sb, p->batch);
	return tp_cuda_sgemm(l, 1, ta, n, k, m, p->alpha, dc, sc, a, sa, db,
			     sb, p->batch);
}
