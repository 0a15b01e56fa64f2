// SPDX-License-Identifier: MIT
/*
 * CUDA linear and (batched) GEMM through cuBLAS. tpager's matrices are
 * row-major; cuBLAS is column-major, where a row-major X is X^T, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands
 * swapped and the same leading dimensions as CBLAS takes.
 *
 * cuBLAS gives the same bits on every run on one GPU model (it uses no
 * atomics unless allowed), and FP32 math stays FP32 (TF32 is opt-in).
 *
 * A batched GEMM runs in parts along its batch, each part a strided
 * batch of its products. cuBLAS promises the same bits for the same
 * call, not that a product comes out the same in batches of different
 * counts (its heuristics may pick another kernel, or split the sums, by
 * the count), so as for convolutions (cuda_dnn.c), the first time a
 * shape runs in a batch of a given count, products 0, 1 and the last
 * are computed again alone and compared byte for byte; a shape that
 * differs runs one product at a time from then on, and the launch that
 * found it is redone so before anything reads it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* --- batch invariance of batched products ------------------------- */

struct gemm_shape {
	int ta, tb, m, n, k;
	float alpha;
};

/* What is known of one shape on this device (a linked cache). */
struct gemm_batching {
	struct gemm_shape shape;
	bool single;		/* one product at a time */
	uint32_t *counts;	/* batch counts checked to agree */
	size_t nr_counts;
	struct gemm_batching *next;
};

static pthread_mutex_t batching_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gemm_batching *batchings;

static struct gemm_batching *batching_of(const struct gemm_shape *g)
{
	struct gemm_batching *b;

	for (b = batchings; b; b = b->next)
		if (!memcmp(&b->shape, g, sizeof(*g)))
			return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->shape = *g;
	b->next = batchings;
	batchings = b;
	return b;
}

/* The products one at a time: the same call for every batch and part. */
static int products_single(const struct tp_op_launch *l,
			   const struct gemm_shape *g, const float *a,
			   long long sa, const float *b, long long sb,
			   float *c, long long sc, int count)
{
	int rc = 0;

	for (int i = 0; i < count && !rc; i++)
		rc = tp_cuda_sgemm(l, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
				   a + i * sa, 0, b + i * sb, 0, c + i * sc, 0,
				   1);
	return rc;
}

/* Products 0, 1 and @count - 1 of @c against each computed alone. */
static int products_compare(const struct tp_op_launch *l,
			    const struct gemm_shape *g, const float *a,
			    long long sa, const float *b, long long sb,
			    const float *c, long long sc, int count,
			    bool *same)
{
	size_t bytes = (size_t)g->m * g->n * sizeof(float);
	int pick[3] = { 0, 1, count - 1 };
	char *alone = malloc(bytes), *batch = malloc(bytes);
	float *scratch = NULL;
	int rc = alone && batch ? 0 : -ENOMEM;

	*same = true;
	if (!rc)
		rc = tp_cuda_check(l, cudaMallocAsync((void **)&scratch, bytes,
						      TP_STREAM(l)),
				   "cudaMallocAsync (batch invariance check)");
	for (int k = 0; k < 3 && !rc && *same; k++) {
		int i = pick[k];

		if (k && i == pick[k - 1])
			continue;
		rc = tp_cuda_sgemm(l, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
				   a + i * sa, 0, b + i * sb, 0, scratch, 0, 1);
		if (!rc)
			rc = tp_cuda_check(l, cudaMemcpyAsync(alone, scratch,
					bytes, cudaMemcpyDeviceToHost,
					TP_STREAM(l)), "cudaMemcpyAsync");
		if (!rc)
			rc = tp_cuda_check(l, cudaMemcpyAsync(batch, c + i * sc,
					bytes, cudaMemcpyDeviceToHost,
					TP_STREAM(l)), "cudaMemcpyAsync");
		if (!rc)
			rc = tp_cuda_check(l, cudaStreamSynchronize(
					TP_STREAM(l)), "cudaStreamSynchronize");
		if (!rc)
			*same = !memcmp(alone, batch, bytes);
	}
	if (scratch)
		cudaFreeAsync(scratch, TP_STREAM(l));
	free(alone);
	free(batch);
	return rc;
}

/*
 * @count products of shape @g, as one strided batch where that count was
 * checked to give each product its bits alone, else one at a time.
 */
static int products(const struct tp_op_launch *l, const struct gemm_shape *g,
		    const float *a, long long sa, const float *b,
		    long long sb, float *c, long long sc, int count)
{
	struct gemm_batching *bt;
	bool single, checked = false, same;
	uint32_t *counts;
	int rc;

	pthread_mutex_lock(&batching_lock);
	bt = batching_of(g);
	single = !bt || bt->single;
	for (size_t i = 0; bt && i < bt->nr_counts && !checked; i++)
		checked = bt->counts[i] == (uint32_t)count;
	pthread_mutex_unlock(&batching_lock);
	if (!bt)
		return -ENOMEM;
	if (single || count == 1)
		return products_single(l, g, a, sa, b, sb, c, sc, count);
	rc = tp_cuda_sgemm(l, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, sa,
			   b, sb, c, sc, count);
	if (rc || checked)
		return rc;
	rc = products_compare(l, g, a, sa, b, sb, c, sc, count, &same);
	if (rc)
		return rc;
	pthread_mutex_lock(&batching_lock);
	if (!same) {
		bt->single = true;
	} else {
		counts = realloc(bt->counts,
				 (bt->nr_counts + 1) * sizeof(*counts));
		if (counts) {
			counts[bt->nr_counts++] = (uint32_t)count;
			bt->counts = counts;
		}
	}
	pthread_mutex_unlock(&batching_lock);
	/* Redone before anything reads it: all runs agree from now. */
	return same ? 0 : products_single(l, g, a, sa, b, sb, c, sc, count);
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
	const struct gemm_shape g = {
		p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha,
	};

	return products(l, &g, TP_IN(l, 0), sa, TP_IN(l, 1), sb,
			TP_OUT(l, 0), sc, (int)tp_rows(l, p->batch));
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
	int rc;

	/* the same products as tp_cpu_gemm_bwd(), all batches at once */
	if (!ta)
		rc = products(l, &(struct gemm_shape){ 0, !tb, m, k, n,
						       p->alpha },
			      dc, sc, b, sb, da, sa, count);
	else
		rc = products(l, &(struct gemm_shape){ tb, 1, k, m, n,
						       p->alpha },
			      b, sb, dc, sc, da, sa, count);
	if (rc)
		return rc;
	if (!tb)
		return products(l, &(struct gemm_shape){ !ta, 0, k, n, m,
							 p->alpha },
				a, sa, dc, sc, db, sb, count);
	return products(l, &(struct gemm_shape){ 1, ta, n, k, m, p->alpha },
			dc, sc, a, sa, db, sb, count);
}
