// SPDX-License-Identifier: MIT
/*
 * CUDA embedding. The backward op gives each element of the table to one
 * thread, which adds the tokens' gradients in token order: repeated tokens
 * sum in a fixed order without atomics. An index out of range reads as a
 * zero row and adds nothing.
 */
#include "kernels/cuda_launch.cuh"

static __global__ void emb_kernel(const float *table, const int32_t *idx,
				  float *y, uint32_t n, uint32_t vocab,
				  uint32_t dim)
{
	TP_FOR_EACH(k, (size_t)n * dim) {
		int32_t v = idx[k / dim];

		y[k] = v >= 0 && (uint32_t)v < vocab ?
		       table[(size_t)v * dim + k % dim] : 0.0f;
	}
}

/*
 * The table's rows are dealt in TP_EMB_SPANS spans: thread (j, span) adds
 * column j of the tokens whose row falls in its span, in token order. Each
 * element has one thread, which adds in the order one thread per column
 * did (the bits are the same), but a token outside the span costs only
 * the read of its index: a thread per column alone read, added and wrote
 * back for every token in turn (27648 tokens of a BERT batch).
 */
#define TP_EMB_SPANS 64
#define TP_EMB_LANES 8

static __global__ void emb_bwd_kernel(const float *dy, const int32_t *idx,
				      float *dt, uint32_t n, uint32_t vocab,
				      uint32_t dim)
{
	uint32_t j = blockIdx.x * TP_COLS_BLOCK + threadIdx.x;
	uint32_t span = blockIdx.y * TP_EMB_LANES + threadIdx.y;
	uint32_t len = (vocab + TP_EMB_SPANS - 1) / TP_EMB_SPANS;
	uint64_t lo = (uint64_t)span * len, hi = lo + len;

	if (j >= dim || lo >= vocab)
		return;
	for (uint32_t t = 0; t < n; t++) {
		int32_t v = idx[t];

		if (v >= 0 && (uint64_t)v >= lo && (uint64_t)v < hi &&
		    (uint32_t)v < vocab)
			dt[(size_t)v * dim + j] += dy[(size_t)t * dim + j];
	}
}

extern "C" int tp_cuda_embedding(const struct tp_op_launch *l)
{
	const struct tp_embedding_params *p = TP_PARAMS(l, tp_embedding_params);

	emb_kernel<<<tp_grid((size_t)p->n * p->dim), TP_BLOCK, 0,
		     TP_STREAM(l)>>>(TP_IN(l, 0), (const int32_t *)l->in[1],
				     TP_OUT(l, 0), p->n, p->vocab, p->dim);
	return tp_cuda_launched(l, "emb_kernel");
}

extern "C" int tp_cuda_embedding_bwd(const struct tp_op_launch *l)
{
	const struct tp_embedding_params *p = TP_PARAMS(l, tp_embedding_params);
	int rc;

	/* A memset: its addresses are checked when enqueued. */
	rc = tp_op_before_copy(l);
	if (rc)
		return rc;
	rc = tp_cuda_check(l, cudaMemsetAsync(TP_OUT(l, 0), 0,
					      (size_t)p->vocab * p->dim *
					      sizeof(float), TP_STREAM(l)),
			   "cudaMemsetAsync");
	if (rc)
		return rc;
	emb_bwd_kernel<<<dim3(tp_col_blocks(p->dim),
			      TP_EMB_SPANS / TP_EMB_LANES),
			 dim3(TP_COLS_BLOCK, TP_EMB_LANES), 0, TP_STREAM(l)>>>(
		TP_IN(l, 0), (const int32_t *)l->in[1], TP_OUT(l, 0), p->n,
		p->vocab, p->dim);
	return tp_cuda_launched(l, "emb_bwd_kernel");
}
