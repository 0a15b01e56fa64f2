/* SPDX-License-Identifier: MIT */
/*
 * The op registry: forward and backward ops of a training step, each a
 * struct tp_op_type that tp_op_run() can run and lineage can replay, with
 * a CPU reference implementation and, in a CUDA build, a CUDA one.
 *
 * All tensors are float32, dense, row-major (NCHW for images), except
 * labels and token indices, which are int32. Every parameter struct below
 * is made of 4-byte fields only, so it has no padding and two records of
 * the same op with the same shapes compare equal byte for byte.
 *
 * Inputs and outputs, in order, per op ("?" marks a tensor present only
 * when the params say so):
 *
 *   linear          in: x[n,in] W[out,in] b[out]?    out: y[n,out]
 *   linear_bwd      in: dy[n,out] x W                out: dx dW db?
 *   gemm            in: A[b,m,k]|[b,k,m]^T B[b,k,n]|[b,n,k]^T
 *                   out: C[b,m,n] = alpha op(A) op(B)
 *   gemm_bwd        in: dC A B                       out: dA dB
 *   conv2d          in: x[n,c,h,w] W[k,c,r,s] b[k]?  out: y[n,k,oh,ow]
 *   conv2d_bwd      in: dy x W                       out: dx dW db?
 *   batchnorm       in: x[n,c,hw] gamma[c] beta[c]   out: y mean[c] invstd[c]
 *   batchnorm_bwd   in: dy x gamma mean invstd       out: dx dgamma dbeta
 *   relu, gelu      in: x                            out: y
 *   relu_bwd, gelu_bwd in: dy x                      out: dx
 *                   (relu_bwd's mask x > 0 is y > 0: it takes y alike)
 *   maxpool         in: x[n,c,h,w]                   out: y[n,c,oh,ow]
 *   maxpool_bwd     in: dy x y                       out: dx
 *   avgpool         in: x                            out: y
 *   avgpool_bwd     in: dy                           out: dx
 *   global_avgpool  in: x[n,c,hw]                    out: y[n,c]
 *   global_avgpool_bwd in: dy[n,c]                   out: dx[n,c,hw]
 *   softmax         in: x[rows,cols]                 out: y
 *   softmax_bwd     in: dy y                         out: dx
 *   layernorm       in: x[rows,cols] gamma[cols] beta[cols]
 *                   out: y mean[rows] invstd[rows]
 *   layernorm_bwd   in: dy x gamma mean invstd       out: dx dgamma dbeta
 *   cross_entropy   in: logits[n,classes] labels[n] (int32)
 *                   out: loss[1] (mean over n) prob[n,classes]
 *   cross_entropy_bwd in: dloss[1] prob labels       out: dlogits
 *   embedding       in: table[vocab,dim] idx[n] (int32)  out: y[n,dim]
 *   embedding_bwd   in: dy[n,dim] idx                out: dtable[vocab,dim]
 *   transpose12     in: x[a,b,c,d]                   out: y[a,c,b,d]
 *   transpose12_bwd in: dy[a,c,b,d]                  out: dx[a,b,c,d]
 *   add             in: a b                          out: y = a + b
 *   add_bwd         in: dy                           out: da db
 *   scale           in: x                            out: y = alpha x
 *   scale_bwd       in: dy                           out: dx = alpha dy
 *   synth_image     in: labels[n] (int32)            out: x[n,per]
 *   sgd_momentum    in: vel g p                      out: vel (in place)
 *   sgd             in: p vel                        out: p (in place)
 *   adam_moments    in: mv[2,count] g p              out: mv (in place)
 *   adam            in: p mv                         out: p (in place)
 *
 * An optimizer step is two ops, each updating one tensor at its own
 * address (TP_OP_INPLACE, output 0 over input 0): first the state from the
 * gradient, then the parameter from the state. tp_op_run() takes one
 * in-place tensor per op, and parameters and optimizer state must both be
 * written in place (they are uncomputable: their pages hold the only copy).
 * Adam's two moments share one tensor, m then v.
 *
 * conv2d and conv2d_bwd take one more, optional, last input: a workspace,
 * scratch the CUDA implementation uses for cuDNN when it is at least
 * tp_kernels_workspace_bytes() long (it allocates on the stream
 * otherwise); the CPU ignores it. Its contents never affect the result,
 * so it can be one long-lived tensor shared by every convolution.
 *
 * Batch-norm and layer-norm use the biased variance and save
 * invstd = 1/sqrt(var + eps). Labels and indices out of range make the CPU
 * op fail with -EINVAL before anything is written; on CUDA (which cannot
 * report from a kernel) they give a zero row and no gradient.
 *
 * Split runs (TP_OP_SPLITTABLE, tp_op_run(3)): the convolutions,
 * batch-norm, the pools, softmax, layer-norm, transpose12 and their
 * backward ops cut the batch, the extent their params give first (n, rows
 * or a); relu, gelu, add, scale and their backward ops cut elements (rows
 * = count). The activations and their gradients are cut (layer-norm's
 * per-row mean and invstd too); parameters, the workspace, parameter
 * gradients and batch-norm's statistics are whole, the reductions among
 * them computed by part 0 over the whole batch in a whole run's order, so
 * that a split run gives a whole run's bits. Batch-norm's per-element
 * outputs use its statistics as stored in float, split or not. On CUDA
 * the convolutions refuse parts (-ENOTSUP): cuDNN does not promise an
 * image the same bits in a batch of another size.
 */
#ifndef TP_KERNELS_OPS_H
#define TP_KERNELS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "tpager.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tp_linear_params {
	uint32_t n, in, out;
	uint32_t bias;			/* 1: b is an input, db an output */
};

struct tp_gemm_params {
	uint32_t batch;			/* >= 1; matrices strided by their size */
	uint32_t m, n, k;
	uint32_t trans_a, trans_b;
	float alpha;
};

struct tp_conv2d_params {
	uint32_t n, c, h, w;		/* input */
	uint32_t k, r, s;		/* k filters of c x r x s */
	uint32_t stride_h, stride_w, pad_h, pad_w;
	uint32_t bias;
};

/*
 * The images of one weight-gradient call of conv2d_bwd on cuDNN: a run of
 * more sums calls of this many in order (kernels/cuda_dnn.c), and its
 * parts in a split begin at multiples of it, so that they make the same
 * calls.
 */
#define TP_CONV_DW_ROWS	128u

struct tp_batchnorm_params {
	uint32_t n, c, hw;
	float eps;
};

/* relu, gelu, add, scale: @alpha is used by scale only. */
struct tp_eltwise_params {
	uint32_t count;
	float alpha;
};

/* maxpool, avgpool (the average counts padding: divides by r*s). */
struct tp_pool_params {
	uint32_t n, c, h, w;
	uint32_t r, s;
	uint32_t stride_h, stride_w, pad_h, pad_w;
};

struct tp_gap_params {
	uint32_t n, c, hw;
};

struct tp_softmax_params {
	uint32_t rows, cols;
};

struct tp_layernorm_params {
	uint32_t rows, cols;
	float eps;
};

struct tp_xent_params {
	uint32_t n, classes;
};

struct tp_embedding_params {
	uint32_t n, vocab, dim;
};

/* Swap the middle two of four dimensions (attention heads in and out). */
struct tp_transpose_params {
	uint32_t a, b, c, d;
};

/*
 * synth_image: the models' synthetic data, draw @draw of a stream seeded
 * by @seed: per image a prototype of its label's class plus noise, the same
 * bits on the CPU and CUDA (kernels/synth.h). No backward op.
 */
struct tp_synth_params {
	uint64_t seed, draw;
	uint32_t n, per, classes;
	uint32_t reserved;		/* 0 */
};

/* sgd_momentum: v = momentum v + (g + wd p); sgd: p -= lr v
 * (the PyTorch formulation). */
struct tp_sgd_params {
	uint32_t count;
	float lr, momentum, weight_decay;
};

/* Adam (Kingma & Ba, Algorithm 1) with L2 weight decay added to g.
 * adam_moments: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2;
 * adam: p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), where
 * @step is t >= 1. */
struct tp_adam_params {
	uint32_t count;
	float lr, beta1, beta2, eps, weight_decay;
	uint32_t step;
};

/* Output spatial size of a window of @r with @stride and @pad over @h. */
static inline uint32_t tp_out_dim(uint32_t h, uint32_t r, uint32_t stride,
				  uint32_t pad)
{
	if (!stride || h + 2 * pad < r)
		return 0;
	return (h + 2 * pad - r) / stride + 1;
}

/**
 * tp_kernels_find() - the registered op type called @name.
 *
 * Return: the op type (static storage), or NULL with errno = ENOENT.
 */
const struct tp_op_type *tp_kernels_find(const char *name);

/** tp_kernels_count() - number of registered op types. */
unsigned tp_kernels_count(void);

/** tp_kernels_at() - the @i'th registered op type, or NULL past the end. */
const struct tp_op_type *tp_kernels_at(unsigned i);

/**
 * tp_kernels_shape() - the tensors an op expects for @params.
 * @type:      a registered op type
 * @in_bytes:  filled with the byte size of each input (room for 8)
 * @n_in:      filled with the number of inputs
 * @out_bytes: filled with the byte size of each output (room for 8)
 * @n_out:     filled with the number of outputs
 *
 * Return: 0; -EINVAL for a @params_len or shape the op does not accept
 * (zero extents, a window larger than the padded input, ...).
 */
int tp_kernels_shape(const struct tp_op_type *type, const void *params,
		     size_t params_len, size_t *in_bytes, unsigned *n_in,
		     size_t *out_bytes, unsigned *n_out);

/**
 * tp_kernels_workspace_bytes() - the workspace an op wants on @vmm (NULL:
 * none): the cuDNN algorithms' scratch for a convolution on the cuda
 * backend, what the sim's profile of a GPU says it took there
 * (vmm.sim.profile), 0 for every other op and backend.
 * @bytes: filled with the size.
 *
 * Return: 0; -EINVAL for params the op does not accept; -EIO when cuDNN
 * fails to choose.
 */
struct tp_vmm;
int tp_kernels_workspace_bytes(struct tp_vmm *vmm,
			       const struct tp_op_type *type,
			       const void *params, size_t params_len,
			       size_t *bytes);

/**
 * tp_kernels_launch_cpu() - run @l on the CPU whatever the backend.
 * tp_kernels_launch_cuda() - enqueue @l on (cudaStream_t)l->stream.
 *
 * Both check the launch against tp_kernels_shape() first, and a part of a
 * split run against the op's cut (-EINVAL for a part that does not fit
 * it). The CUDA one returns -ENODEV in a build without CUDA or with no
 * usable device, and -ENOTSUP for an op it lacks or a part it cannot
 * compute exactly (the convolutions'). Return: 0 or -errno.
 */
int tp_kernels_launch_cpu(const struct tp_op_launch *l);
int tp_kernels_launch_cuda(const struct tp_op_launch *l);

/**
 * tp_kernels_cuda_available() - whether CUDA ops can run here.
 * Return: 0; -ENODEV with no CUDA build, no driver or no device.
 */
int tp_kernels_cuda_available(void);

#ifdef __cplusplus
}
#endif

#endif /* TP_KERNELS_OPS_H */
