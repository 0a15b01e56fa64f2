// SPDX-License-Identifier: MIT
/*
 * CUDA convolution through cuDNN 9.
 *
 * Convolutions use deterministic algorithms only, chosen by cuDNN's
 * heuristics (not by timing runs, which could pick differently from one
 * run to the next), with FP32 FMA math so that no TF32 rounding creeps in
 * unless the launch allows TF32 (l->math, vmm.math: cuDNN's default math,
 * tensor cores on the inputs rounded to TF32, as PyTorch's default runs
 * them), and within the launch's workspace bound (l->workspace_max, the
 * context's vmm.workspace_max): the fastest that fits, else the one that
 * takes least. The choice and its workspace size are cached per shape,
 * bound and math: a recompute replays exactly the algorithm of the first
 * run. The
 * workspace is the op's optional last input (a tpager tensor, so the pager
 * counts it), or else comes from the stream-ordered allocator and goes
 * back to it on the same stream.
 *
 * A split run's part (TP_OP_SPLITTABLE) computes its rows of the batch as
 * a problem of that many images and must give exactly the bits a whole
 * run gives them. cuDNN promises the same bits for the same problem, not
 * that one image's output is the same in a batch of another size (an
 * engine may tile or split its sums by the problem's shape), so each
 * direction of a shape is checked on the device the first time it runs
 * on a batch of a given size (see "batch invariance" below); one that
 * fails runs one image at a time from then on, a problem the same for
 * every batch and part. The weight and bias gradients of a batch of up to
 * TP_CONV_DW_ROWS images are part 0's, over the whole batch: the very
 * call a whole run makes. A larger batch's are summed over calls of that
 * many images in order (beta 1 after the first), by part 0 over the batch
 * or by parts that sum (l->sums), which begin at multiples of it, each
 * making its calls: the same problems on the same rows, added in the same
 * order. The other ops that
 * cuDNN could run (batch-norm, ReLU, pooling, softmax) are tpager's own
 * kernels, whose parts are exact by construction.
 *
 * One file, past the usual length: the descriptors, the choice of
 * algorithms and the batch-invariance check share the cuDNN handle and
 * the cache of choices, under one lock.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "kernels/batching.h"
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

/* The directions of a convolution whose output rows are the batch's. */
enum conv_dir {
	CONV_FWD,	/* x -> y */
	CONV_DATA,	/* dy -> dx */
};

/* What batching.h knows a direction of a shape by. */
struct conv_key {
	char device[8];
	int dir;
	int algo, math;			/* the direction's algorithm */
	struct tp_conv2d_params shape;
};

/* The algorithms chosen for one shape (a singly linked cache, locked). */
struct conv_algo {
	struct tp_conv2d_params shape;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd_data;
	cudnnConvolutionBwdFilterAlgo_t bwd_filter;
	cudnnMathType_t fwd_math, data_math, filter_math;
	size_t fwd_ws, bwd_ws;
	size_t limit;			/* the bound it was chosen within */
	enum tp_op_math math;		/* and the math it allows */
	struct conv_algo *next;
};

static struct conv_algo *conv_cache;

/* Descriptors of @p's convolution on a batch of @n images. */
static int conv_desc_n(const struct tp_op_launch *l,
		       const struct tp_conv2d_params *p, uint32_t n,
		       struct dnn_desc *d)
{
	int rc = 0;

	DNN(tensor4d(&d->x, n, p->c, p->h, p->w));
	DNN(tensor4d(&d->y, n, p->k,
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
	/* TF32 allowed: cuDNN's default math, tensor cores included. */
	DNN(cudnnSetConvolutionMathType(d->conv, l->math == TP_MATH_TF32 ?
					CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
out:
	return rc;
}

static int conv_desc(const struct tp_op_launch *l,
		     const struct tp_conv2d_params *p, struct dnn_desc *d)
{
	return conv_desc_n(l, p, p->n, d);
}

/*
 * Pick, from cuDNN's ranked list, the first algorithm that is supported,
 * deterministic, uses FMA math (unless @tf32) and whose workspace is
 * within @limit (0: any); failing that, the first deterministic one
 * within it; failing that, the deterministic one that takes least (FMA
 * math first). Never one that converts FP32 to FP16.
 */
#define USABLE(perf) ((perf).status == CUDNN_STATUS_SUCCESS && \
		      (perf).determinism == CUDNN_DETERMINISTIC && \
		      (perf).mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)

/* @a takes less workspace than @b, or as much with FMA math and @b not. */
#define LEANER(a, b) ((a).memory < (b).memory || \
		      ((a).memory == (b).memory && \
		       (a).mathType == CUDNN_FMA_MATH && \
		       (b).mathType != CUDNN_FMA_MATH))

#define PICK(perf, n, limit, tf32, out_algo, out_math) ({ \
	size_t lim_ = (limit) ? (limit) : SIZE_MAX; \
	int found_ = -1, i_; \
	for (i_ = 0; i_ < (n) && found_ < 0 && !(tf32); i_++) \
		if (USABLE((perf)[i_]) && (perf)[i_].memory <= lim_ && \
		    (perf)[i_].mathType == CUDNN_FMA_MATH) \
			found_ = i_; \
	for (i_ = 0; i_ < (n) && found_ < 0; i_++) \
		if (USABLE((perf)[i_]) && (perf)[i_].memory <= lim_) \
			found_ = i_; \
	if (found_ < 0)	/* none within the bound: the leanest */ \
		for (i_ = 0; i_ < (n); i_++) \
			if (USABLE((perf)[i_]) && (found_ < 0 || \
			    LEANER((perf)[i_], (perf)[found_]))) \
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
	bool tf32;

	for (a = conv_cache; a; a = a->next)
		if (!memcmp(&a->shape, p, sizeof(*p)) &&
		    a->limit == l->workspace_max && a->math == l->math) {
			*out_algo = a;
			return 0;
		}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->shape = *p;
	a->limit = l->workspace_max;
	a->math = l->math;
	DNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, d->x, d->w, d->conv,
			d->y, NF, &nf, fp));
	DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, d->w, d->y,
			d->conv, d->x, ND, &nd, dp));
	DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, d->x, d->y,
			d->conv, d->w, NW, &nw, wp));
	tf32 = a->math == TP_MATH_TF32;
	if (!PICK(fp, nf, a->limit, tf32, &a->fwd, &a->fwd_math) ||
	    !PICK(dp, nd, a->limit, tf32, &a->bwd_data, &a->data_math) ||
	    !PICK(wp, nw, a->limit, tf32, &a->bwd_filter, &a->filter_math)) {
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

int tp_cuda_conv_workspace(const struct tp_conv2d_params *p, size_t limit,
			   enum tp_op_math math, size_t *bytes)
{
	const struct tp_op_launch probe = {
		.type = tp_kernels_find("conv2d"), .params = p,
		.params_len = sizeof(*p), .workspace_max = limit,
		.math = math,
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

/* --- batch invariance ------------------------------------------------ */

/*
 * The first time a direction runs on a batch of a given size (a whole
 * run's, or a part's of several images), images 0, 1 and the last are
 * computed again, each as a problem of one image, and compared byte for
 * byte with what the batch gave them (batching.h). One that differs makes
 * the direction run one image at a time from then on, and the launch that
 * found it is redone so, before anything reads its output: every run of
 * the shape then agrees image by image. It is evidence on three images
 * (and, through image 1, an image off the batch's alignment), not a
 * proof; tests/kernels-split runs every part against the whole on each
 * device it runs on. A check costs a one-image problem and a wait for the
 * stream, once per shape, direction and batch size.
 */

/* One direction of @p on @n images, its descriptors and workspace size. */
struct conv_problem {
	struct dnn_desc d;
	uint32_t n;
	size_t ws;
};

static int problem_init(const struct tp_op_launch *l,
			const struct tp_conv2d_params *p,
			const struct conv_algo *a, enum conv_dir dir,
			uint32_t n, struct conv_problem *pb)
{
	struct dnn_desc *d = &pb->d;
	int rc;

	pb->n = n;
	rc = conv_desc_n(l, p, n, d);
	if (rc)
		return rc;
	if (dir == CONV_FWD) {
		DNN(cudnnSetConvolutionMathType(d->conv, a->fwd_math));
		DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, d->x, d->w,
				d->conv, d->y, a->fwd, &pb->ws));
	} else {
		DNN(cudnnSetConvolutionMathType(d->conv, a->data_math));
		DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, d->w,
				d->y, d->conv, d->x, a->bwd_data, &pb->ws));
	}
out:
	return rc;
}

/* Floats of one image of what direction @dir reads and writes. */
static size_t src_image(const struct tp_conv2d_params *p, enum conv_dir dir)
{
	size_t x = (size_t)p->c * p->h * p->w;
	size_t y = (size_t)p->k * tp_out_dim(p->h, p->r, p->stride_h, p->pad_h) *
		   tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

	return dir == CONV_FWD ? x : y;
}

static size_t dst_image(const struct tp_conv2d_params *p, enum conv_dir dir)
{
	return src_image(p, dir == CONV_FWD ? CONV_DATA : CONV_FWD);
}

/*
 * Run @pb on @src into @dst with the weights @w: the workspace @ws of
 * @ws_bytes when large enough, else stream-ordered memory of its own.
 */
static int problem_run(const struct tp_op_launch *l,
		       const struct conv_algo *a, enum conv_dir dir,
		       struct conv_problem *pb, const float *w,
		       const float *src, float *dst, void *ws, size_t ws_bytes)
{
	struct dnn_desc *d = &pb->d;
	bool owned = false;
	int rc = 0;

	if (pb->ws > ws_bytes) {
		ws = NULL;
		owned = true;
		rc = tp_cuda_check(l, cudaMallocAsync(&ws, pb->ws, TP_STREAM(l)),
				   "cudaMallocAsync (convolution workspace)");
		if (rc)
			return rc;
	}
	if (dir == CONV_FWD) {
		DNN(cudnnSetConvolutionMathType(d->conv, a->fwd_math));
		DNN(cudnnConvolutionForward(dnn, &one, d->x, src, d->w, w,
					    d->conv, a->fwd, ws, pb->ws, &zero,
					    d->y, dst));
	} else {
		DNN(cudnnSetConvolutionMathType(d->conv, a->data_math));
		DNN(cudnnConvolutionBackwardData(dnn, &one, d->w, w, d->y, src,
						 d->conv, a->bwd_data, ws,
						 pb->ws, &zero, d->x, dst));
	}
out:
	ws_put(l, ws, owned);
	return rc;
}

/* One direction's images and what runs them, for tp_batching_run(). */
struct conv_job {
	const struct tp_op_launch *l;
	const struct tp_conv2d_params *p;
	const struct conv_algo *a;
	enum conv_dir dir;
	const float *w, *src;
	float *dst;
	void *ws;
	size_t ws_bytes;
};

/* Every image as one problem. */
static int job_all(void *priv, uint32_t n)
{
	const struct conv_job *j = priv;
	struct conv_problem pb = { 0 };
	int rc = problem_init(j->l, j->p, j->a, j->dir, n, &pb);

	if (!rc)
		rc = problem_run(j->l, j->a, j->dir, &pb, j->w, j->src, j->dst,
				 j->ws, j->ws_bytes);
	desc_destroy(&pb.d);
	return rc;
}

/* @n images one at a time, each a problem of one image. */
static int job_single(void *priv, uint32_t n)
{
	const struct conv_job *j = priv;
	struct conv_problem one_pb = { 0 };
	size_t si = src_image(j->p, j->dir), di = dst_image(j->p, j->dir);
	int rc = problem_init(j->l, j->p, j->a, j->dir, 1, &one_pb);

	for (uint32_t i = 0; i < n && !rc; i++)
		rc = problem_run(j->l, j->a, j->dir, &one_pb, j->w,
				 j->src + i * si, j->dst + i * di, j->ws,
				 j->ws_bytes);
	desc_destroy(&one_pb.d);
	return rc;
}

/* Images @pick of the output against each computed alone into scratch. */
static int job_compare(void *priv, const uint32_t *pick, unsigned np,
		       bool *same)
{
	const struct conv_job *j = priv;
	const struct tp_op_launch *l = j->l;
	size_t si = src_image(j->p, j->dir), di = dst_image(j->p, j->dir);
	size_t bytes = di * sizeof(float);
	struct conv_problem one_pb = { 0 };
	float *scratch = NULL;
	int rc;

	*same = true;
	rc = tp_cuda_check(l, cudaMallocAsync((void **)&scratch, bytes,
					      TP_STREAM(l)),
			   "cudaMallocAsync (batch invariance check)");
	if (!rc)
		rc = problem_init(l, j->p, j->a, j->dir, 1, &one_pb);
	for (unsigned q = 0; q < np && !rc && *same; q++) {
		rc = problem_run(l, j->a, j->dir, &one_pb, j->w,
				 j->src + pick[q] * si, scratch, j->ws,
				 j->ws_bytes);
		if (!rc)
			rc = tp_cuda_same_bytes(l, scratch,
						j->dst + pick[q] * di, bytes,
						same);
	}
	desc_destroy(&one_pb.d);
	if (scratch)
		cudaFreeAsync(scratch, TP_STREAM(l));
	return rc;
}

static const struct tp_batching_ops conv_ops = {
	.all = job_all, .single = job_single, .compare = job_compare,
};

/*
 * Direction @dir of @p on @n of the batch's images at @src into @dst,
 * with a whole run's bits (batching.h). Lock held.
 */
static int conv_images(const struct tp_op_launch *l,
		       const struct tp_conv2d_params *p, struct conv_algo *a,
		       enum conv_dir dir, uint32_t n, const float *w,
		       const float *src, float *dst, void *ws, size_t ws_bytes)
{
	struct conv_job j = { l, p, a, dir, w, src, dst, ws, ws_bytes };
	struct conv_key key;

	memset(&key, 0, sizeof(key));
	memcpy(key.device, "cudnn", 6);
	key.dir = dir;
	key.algo = dir == CONV_FWD ? (int)a->fwd : (int)a->bwd_data;
	key.math = dir == CONV_FWD ? (int)a->fwd_math : (int)a->data_math;
	key.shape = *p;
	/* Images one at a time would cost a GPU's step many times over. */
	return tp_batching_run(&key, sizeof(key), n, p->n, 0, &conv_ops, &j);
}

int tp_cuda_conv2d(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	uint32_t rows = (uint32_t)tp_rows(l, p->n);
	struct dnn_desc d = { 0 }, part = { 0 };
	struct conv_algo *a;
	void *ws = NULL;
	bool owned = false;
	int rc;

	rc = dnn_begin(l);
	if (rc)
		return rc;
	rc = conv_desc(l, p, &d);
	if (!rc)
		rc = conv_choose(l, p, &d, &a);
	if (!rc)
		rc = ws_get(l, p->bias ? 3 : 2, a->fwd_ws, &ws, &owned);
	if (!rc)
		rc = conv_images(l, p, a, CONV_FWD, rows, TP_IN(l, 1),
				 TP_IN(l, 0), TP_OUT(l, 0), ws,
				 ws ? a->fwd_ws : 0);
	if (!rc && p->bias)
		rc = conv_desc_n(l, p, rows, &part);
	/* Not yet shown to take memory the stream still waits for. */
	if (!rc && p->bias)
		rc = tp_op_before_copy(l);
	if (rc)
		goto out;
	/* The bias of each element alone: exact in parts. */
	if (p->bias)
		DNN(cudnnAddTensor(dnn, &one, part.b, TP_IN(l, 2), &one,
				   part.y, TP_OUT(l, 0)));
out:
	desc_destroy(&part);
	ws_put(l, ws, owned);
	return dnn_end(&d, rc);
}

/*
 * dW (and db) of the images of @q at @x and @dy, added to what is there
 * unless @first: one weight-gradient call, in the scratch @have of
 * @have_bytes where it is enough. Lock held.
 */
static int conv_dw(const struct tp_op_launch *l,
		   const struct tp_conv2d_params *q, const float *x,
		   const float *dy, bool first, void *have, size_t have_bytes)
{
	const float *beta = first ? &zero : &one;
	struct dnn_desc d = { 0 };
	struct conv_algo *a;
	void *ws = NULL;
	bool owned = false;
	int rc;

	rc = conv_desc(l, q, &d);
	if (!rc)
		rc = conv_choose(l, q, &d, &a);
	if (!rc && a->bwd_ws <= have_bytes)
		ws = have;
	else if (!rc)
		rc = ws_get(l, 3, a->bwd_ws, &ws, &owned);
	if (rc)
		goto out;
	DNN(cudnnSetConvolutionMathType(d.conv, a->filter_math));
	DNN(cudnnConvolutionBackwardFilter(dnn, &one, d.x, x, d.y, dy, d.conv,
					   a->bwd_filter, ws, a->bwd_ws, beta,
					   d.w, TP_OUT(l, 1)));
	if (q->bias)
		DNN(cudnnConvolutionBackwardBias(dnn, &one, d.y, dy, beta, d.b,
						 TP_OUT(l, 2)));
out:
	ws_put(l, ws, owned);
	desc_destroy(&d);
	return rc;
}

/*
 * dW (and db) of @n images at the launch's dy and x, TP_CONV_DW_ROWS at a
 * time in order, from 0 where @first (the batch's image 0), in @ws of
 * @ws_bytes where it is enough. Lock held.
 */
static int conv_dw_blocks(const struct tp_op_launch *l, size_t n, bool first,
			  void *ws, size_t ws_bytes)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	struct tp_conv2d_params q = *p;
	size_t xi = dst_image(p, CONV_DATA), yi = src_image(p, CONV_DATA);
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i += TP_CONV_DW_ROWS) {
		q.n = (uint32_t)(n - i < TP_CONV_DW_ROWS ? n - i :
			      TP_CONV_DW_ROWS);
		rc = conv_dw(l, &q, TP_IN(l, 1) + i * xi, TP_IN(l, 0) + i * yi,
			     first && !i, ws, ws_bytes);
	}
	return rc;
}

int tp_cuda_conv2d_bwd(const struct tp_op_launch *l)
{
	const struct tp_conv2d_params *p = TP_PARAMS(l, tp_conv2d_params);
	uint32_t rows = (uint32_t)tp_rows(l, p->n);
	struct dnn_desc d = { 0 };
	struct conv_algo *a;
	void *ws = NULL;
	bool owned = false;
	int rc;

	rc = dnn_begin(l);
	if (rc)
		return rc;
	rc = conv_desc(l, p, &d);
	if (!rc)
		rc = conv_choose(l, p, &d, &a);
	if (!rc)
		rc = ws_get(l, 3, a->bwd_ws, &ws, &owned);
	if (!rc)
		rc = conv_images(l, p, a, CONV_DATA, rows, TP_IN(l, 2),
				 TP_IN(l, 0), TP_OUT(l, 0), ws,
				 ws ? a->bwd_ws : 0);
	/*
	 * The weight and bias gradients: summed by the parts over their
	 * rows, or part 0's (or a whole run's) over the whole batch, whose
	 * rows it may read: one call up to TP_CONV_DW_ROWS images.
	 */
	if (!rc && l->sums)
		rc = conv_dw_blocks(l, rows, !l->row0, ws, ws ? a->bwd_ws : 0);
	else if (!rc && tp_writes_whole(l))
		rc = conv_dw_blocks(l, p->n, true, ws, ws ? a->bwd_ws : 0);
	ws_put(l, ws, owned);
	return dnn_end(&d, rc);
}
