// SPDX-License-Identifier: MIT
/*
 * CUDA convolution through cuDNN 9.
 *
 * Convolutions use deterministic algorithms only, chosen by cuDNN's
 * heuristics (not by timing runs, which could pick differently from one
 * run to the next), with FP32 FMA math so that no TF32 rounding creeps in.
 * The choice and its workspace size are cached per shape: a recompute
 * replays exactly the algorithm of the first run. The workspace is the
 * op's optional last input (a tpager tensor, so the pager counts it), or
 * else comes from the stream-ordered allocator and goes back to it on the
 * same stream.
 *
 * A split run's parts (TP_OP_SPLITTABLE) are refused with -ENOTSUP: cuDNN
 * promises the same bits for the same problem, not that one image's
 * output is the same in a batch of another size (its engines tile and
 * split their sums by the problem's shape), and a part must give exactly
 * a whole run's bits. The other ops that cuDNN could run (batch-norm,
 * ReLU, pooling, softmax) are tpager's own kernels for that reason.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "kernels/cuda_util.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static cudnnHandle_t dnn;	/* under tp_cuda_lock() */

static const float one = 1.0f, zero = 0.0f;

#define DNN(call) do { \
	cudnnStatus_t s_ = (call); \
	if (s_ != CUDNN_STATUS_SUCCESS) { \
		rc = tp_cuda_fail(l, #call, cudnnGetErrorString(s_)); \
		goto out; \
	} \
} while (0)

/* Descriptors of one call; all NULL ones are skipped on destroy. */
struct dnn_desc {
	cudnnTensorDescriptor_t x, y, b;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
};

static void desc_destroy(struct dnn_desc *d)
{
	if (d->x)
		cudnnDestroyTensorDescriptor(d->x);
	if (d->y)
		cudnnDestroyTensorDescriptor(d->y);
	if (d->b)
		cudnnDestroyTensorDescriptor(d->b);
	if (d->w)
		cudnnDestroyFilterDescriptor(d->w);
	if (d->conv)
		cudnnDestroyConvolutionDescriptor(d->conv);
}

static cudnnStatus_t tensor4d(cudnnTensorDescriptor_t *t, uint32_t n,
			      uint32_t c, uint32_t h, uint32_t w)
{
	cudnnStatus_t s = cudnnCreateTensorDescriptor(t);

	if (s != CUDNN_STATUS_SUCCESS) {
		*t = NULL;
		return s;
	}
	return cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NCHW,
					  CUDNN_DATA_FLOAT, (int)n, (int)c,
					  (int)h, (int)w);
}

/* Take the lock and bind the shared handle to the launch's stream. */
static int dnn_begin(const struct tp_op_launch *l)
{
	int rc = 0;

	tp_cuda_lock();
	if (!dnn)
		DNN(cudnnCreate(&dnn));
	DNN(cudnnSetStream(dnn, TP_STREAM(l)));
	return 0;
out:
	tp_cuda_unlock();
	return rc;
}

static int dnn_end(struct dnn_desc *d, int rc)
{
	desc_destroy(d);
	tp_cuda_unlock();
	return rc;
}

/* --- convolution ------------------------------------------------------ */

/* The algorithms chosen for one shape (a singly linked cache, locked). */
struct conv_algo {
	struct tp_conv2d_params shape;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd_data;
	cudnnConvolutionBwdFilterAlgo_t bwd_filter;
	cudnnMathType_t fwd_math, data_math, filter_math;
	size_t fwd_ws, bwd_ws;
	struct conv_algo *next;
};

static struct conv_algo *conv_cache;

static int conv_desc(const struct tp_op_launch *l,
		     const struct tp_conv2d_params *p, struct dnn_desc *d)
{
	int rc = 0;

	DNN(tensor4d(&d->x, p->n, p->c, p->h, p->w));
	DNN(tensor4d(&d->y, p->n, p->k,
		     tp_out_dim(p->h, p->r, p->stride_h, p->pad_h),
		     tp_out_dim(p->w, p->s, p->stride_w, p->pad_w)));
	DNN(tensor4d(&d->b, 1, p->k, 1, 1));
	DNN(cudnnCreateFilterDescriptor(&d->w));
	DNN(cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT,
				       CUDNN_TENSOR_NCHW, (int)p->k,
				       (int)p->c, (int)p->r, (int)p->s));
	DNN(cudnnCreateConvolutionDescriptor(&d->conv));
	DNN(cudnnSetConvolution2dDescriptor(d->conv, (int)p->pad_h,
					    (int)p->pad_w, (int)p->stride_h,
					    (int)p->stride_w, 1, 1,
					    CUDNN_CROSS_CORRELATION,
					    CUDNN_DATA_FLOAT));
	DNN(cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH));
out:
	return rc;
}

/*
 * Pick, from cuDNN's ranked list, the first algorithm that is supported,
 * deterministic and uses FMA math; failing that, the first deterministic.
 */
#define PICK(perf, n, out_algo, out_math) ({ \
	int found_ = -1, i_; \
	for (i_ = 0; i_ < (n) && found_ < 0; i_++) \
		if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && \
		    (perf)[i_].determinism == CUDNN_DETERMINISTIC && \
		    (perf)[i_].mathType == CUDNN_FMA_MATH) \
			found_ = i_; \
	for (i_ = 0; i_ < (n) && found_ < 0; i_++) \
		if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && \
		    (perf)[i_].determinism == CUDNN_DETERMINISTIC) \
			found_ = i_; \
	if (found_ >= 0) { \
		*(out_algo) = (perf)[found_].algo; \
		*(out_math) = (perf)[found_].mathType; \
	} \
	found_ >= 0; \
})

static int conv_choose(const struct tp_op_launch *l,
		       const struct tp_conv2d_params *p, struct dnn_desc *d,
		       struct conv_algo **out_algo)
{
	enum {
		NF = CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
		ND = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
		NW = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
	};
	cudnnConvolutionFwdAlgoPerf_t fp[NF];
	cudnnConvolutionBwdDataAlgoPerf_t dp[ND];
	cudnnConvolutionBwdFilterAlgoPerf_t wp[NW];
	struct conv_algo *a;
	size_t ws_data, ws_filter;
	int nf, nd, nw, rc = 0;

	for (a = conv_cache; a; a = a->next)
		if (!memcmp(&a->shape, p, sizeof(*p))) {
			*out_algo = a;
			return 0;
		}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->shape = *p;
	DNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, d->x, d->w, d->conv,
			d->y, NF, &nf, fp));
	DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, d->w, d->y,
			d->conv, d->x, ND, &nd, dp));
	DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, d->x, d->y,
			d->conv, d->w, NW, &nw, wp));
	if (!PICK(fp, nf, &a->fwd, &a->fwd_math) ||
	    !PICK(dp, nd, &a->bwd_data, &a->data_math) ||
	    !PICK(wp, nw, &a->bwd_filter, &a->filter_math)) {
		rc = tp_cuda_fail(l, "choosing a convolution algorithm",
				  "no deterministic algorithm for this shape");
		goto out;
	}
	DNN(cudnnSetConvolutionMathType(d->conv, a->fwd_math));
	DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, d->x, d->w, d->conv,
			d->y, a->fwd, &a->fwd_ws));
	DNN(cudnnSetConvolutionMathType(d->conv, a->data_math));
	DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, d->w, d->y,
			d->conv, d->x, a->bwd_data, &ws_data));
	DNN(cudnnSetConvolutionMathType(d->conv, a->filter_math));
	DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, d->x, d->y,
			d->conv, d->w, a->bwd_filter, &ws_filter));
	a->bwd_ws = ws_data > ws_filter ? ws_data : ws_filter;
	a->next = conv_cache;
	conv_cache = a;
	*out_algo = a;
	return 0;
out:
	free(a);
	return rc;
}

/*
 * The workspace: the launch's last input when the caller gave one large
 * enough (input @n, after the op's own), else stream-ordered memory.
 */
static int ws_get(const struct tp_op_launch *l, unsigned n, size_t bytes,
		  void **ws, bool *owned)
{
	*ws = NULL;
	*owned = false;
	if (!bytes)
		return 0;
	if (l->n_in > n && l->in_bytes && l->in_bytes[n] >= bytes) {
		*ws = l->in[n];
		return 0;
	}
	*owned = true;
	return tp_cuda_check(l, cudaMallocAsync(ws, bytes, TP_STREAM(l)),
			     "cudaMallocAsync (convolution workspace)");
}

static void ws_put(const struct tp_op_launch *l, void *ws, bool owned)
{
	if (owned && ws)
		cudaFreeAsync(ws, TP_STREAM(l));
}

/* Whether @l computes every image: a whole run, or one part of them all. */
static bool conv_whole(const struct tp_op_launch *l,
		       const struct tp_conv2d_params *p)
{
	return tp_rows(l, p->n) == p->n;
}

int tp_cuda_conv_workspace(const struct tp_conv2d_params *p, size_t *bytes)
{
	const struct tp_op_launch probe = {
		.type = tp_kernels_find("conv2d"), .params = p,
		.params_len = sizeof(*p),
	};
	const struct tp_op_launch *l = &probe;
	struct dnn_desc d = { 0 };
	struct conv_algo *a;
	int rc = 0;

	*bytes = 0;
	tp_cuda_lock();
	if (!dnn)
		DNN(cudnnCreate(&dnn));
	rc = conv_desc(l, p, &d);
	if (!rc)
		rc = conv_choose(l, p, &d, &a);
	if (!rc)
		*bytes = a->fwd_ws > a->bwd_ws ? a->fwd_ws : a->bwd_ws;
out:
	return dnn_end(&d, rc);
}

int tp_cuda_conv2d(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	struct dnn_desc d = { 0 };
	struct conv_algo *a;
	void *ws = NULL;
	bool owned = false;
	int rc;

	if (!conv_whole(l, p))
		return -ENOTSUP;
	rc = dnn_begin(l);
	if (rc)
		return rc;
	rc = conv_desc(l, p, &d);
	if (!rc)
		rc = conv_choose(l, p, &d, &a);
	if (!rc)
		rc = ws_get(l, p->bias ? 3 : 2, a->fwd_ws, &ws, &owned);
	if (rc)
		goto out;
	DNN(cudnnSetConvolutionMathType(d.conv, a->fwd_math));
	DNN(cudnnConvolutionForward(dnn, &one, d.x, TP_IN(l, 0), d.w,
				    TP_IN(l, 1), d.conv, a->fwd, ws,
				    a->fwd_ws, &zero, d.y, TP_OUT(l, 0)));
	if (p->bias)
		DNN(cudnnAddTensor(dnn, &one, d.b, TP_IN(l, 2), &one, d.y,
				   TP_OUT(l, 0)));
out:
	ws_put(l, ws, owned);
	return dnn_end(&d, rc);
}

int tp_cuda_conv2d_bwd(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	struct dnn_desc d = { 0 };
	struct conv_algo *a;
	void *ws = NULL;
	bool owned = false;
	int rc;

	if (!conv_whole(l, p))
		return -ENOTSUP;
	rc = dnn_begin(l);
	if (rc)
		return rc;
	rc = conv_desc(l, p, &d);
	if (!rc)
		rc = conv_choose(l, p, &d, &a);
	if (!rc)
		rc = ws_get(l, 3, a->bwd_ws, &ws, &owned);
	if (rc)
		goto out;
	DNN(cudnnSetConvolutionMathType(d.conv, a->data_math));
	DNN(cudnnConvolutionBackwardData(dnn, &one, d.w, TP_IN(l, 2), d.y,
					 TP_IN(l, 0), d.conv, a->bwd_data, ws,
					 a->bwd_ws, &zero, d.x, TP_OUT(l, 0)));
	DNN(cudnnSetConvolutionMathType(d.conv, a->filter_math));
	DNN(cudnnConvolutionBackwardFilter(dnn, &one, d.x, TP_IN(l, 1), d.y,
					   TP_IN(l, 0), d.conv, a->bwd_filter,
					   ws, a->bwd_ws, &zero, d.w,
					   TP_OUT(l, 1)));
	if (p->bias)
		DNN(cudnnConvolutionBackwardBias(dnn, &one, d.y, TP_IN(l, 0),
						 &zero, d.b, TP_OUT(l, 2)));
out:
	ws_put(l, ws, owned);
	return dnn_end(&d, rc);
}
