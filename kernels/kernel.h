/* SPDX-License-Identifier: MIT */
/*
 * Inside the op registry: the descriptor behind each struct tp_op_type and
 * the implementations it dispatches to. Only kernels/ includes this.
 */
#ifndef TP_KERNELS_KERNEL_H
#define TP_KERNELS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TP_KERNEL_MAX_IO 8

/*
 * One registered op. @type is what callers hold; the launch function in it
 * finds this descriptor again with container_of.
 */
struct tp_kernel {
	struct tp_op_type type;
	size_t params_len;
	/*
	 * Validate @p and give the byte size of every input and output.
	 * Return 0 or -EINVAL.
	 */
	int (*shape)(const void *p, size_t *in, unsigned *n_in, size_t *out,
		     unsigned *n_out);
	/* Floating-point operations of one run, for cost_ns. */
	double (*flops)(const void *p);
	/* The implementations; @cuda is NULL where there is none. */
	int (*cpu)(const struct tp_op_launch *l);
	int (*cuda)(const struct tp_op_launch *l);
	/* Takes an optional last input: device scratch (see ops.h). */
	bool workspace;
	/*
	 * A splittable op (TP_OP_SPLITTABLE): the extent of the outermost
	 * dimension of the tensors in @cut_in / @cut_out (struct
	 * tp_op_split); NULL for an op that never runs in parts.
	 */
	uint32_t (*rows)(const void *p);
	uint64_t cut_in, cut_out;
	/*
	 * Where @sum_passes is set, the parts may instead add to the whole
	 * outputs (struct tp_op_split, sums) in that many passes over the
	 * rows, beginning at multiples of @sum_granule rows (0: any); a run
	 * of no more rows than that may not.
	 */
	unsigned sum_passes;
	uint32_t sum_granule;
};

#define tp_kernel_of(t) \
	((const struct tp_kernel *)((const char *)(t) - \
				    offsetof(struct tp_kernel, type)))

/* Cost model of one op from its FLOPs and bytes moved (registry.c). */
uint64_t tp_kernel_cost(const struct tp_kernel *k, const void *params,
			size_t params_len, const size_t *in_bytes,
			unsigned n_in);

/*
 * The rows of the cut tensors a launch computes: its part's, or all @all
 * of them in a whole run (rows 0). The cut tensors' pointers are already
 * at the part's first row.
 */
static inline size_t tp_rows(const struct tp_op_launch *l, size_t all)
{
	return l->rows ? l->rows : all;
}

/*
 * Whether the launch writes the op's whole outputs: a whole run, or part
 * 0 of a split one, which may read every row of the cut inputs. (A split
 * that sums, l->sums, writes them in every part.)
 */
static inline bool tp_writes_whole(const struct tp_op_launch *l)
{
	return !l->part;
}

#define TP_IN(l, i)	((const float *)(l)->in[i])
#define TP_OUT(l, i)	((float *)(l)->out[i])
#define TP_PARAMS(l, T)	((const struct T *)(l)->params)

/* CPU implementations (kernels/cpu_*.c). */
#define TP_CPU_OPS(X) \
	X(linear) X(linear_bwd) X(gemm) X(gemm_bwd) \
	X(conv2d) X(conv2d_bwd) X(batchnorm) X(batchnorm_bwd) \
	X(relu) X(relu_bwd) X(gelu) X(gelu_bwd) \
	X(maxpool) X(maxpool_bwd) X(avgpool) X(avgpool_bwd) \
	X(global_avgpool) X(global_avgpool_bwd) \
	X(softmax) X(softmax_bwd) X(layernorm) X(layernorm_bwd) \
	X(cross_entropy) X(cross_entropy_bwd) \
	X(embedding) X(embedding_bwd) X(transpose12) X(transpose12_bwd) \
	X(add) X(add_bwd) \
	X(scale) X(scale_bwd) X(synth_image) \
	X(sgd_momentum) X(sgd) X(adam_moments) X(adam)

#define TP_DECLARE_CPU(name) int tp_cpu_##name(const struct tp_op_launch *l);
TP_CPU_OPS(TP_DECLARE_CPU)
#undef TP_DECLARE_CPU

#ifdef TP_HAVE_CUDA
#define TP_DECLARE_CUDA(name) int tp_cuda_##name(const struct tp_op_launch *l);
TP_CPU_OPS(TP_DECLARE_CUDA)
#undef TP_DECLARE_CUDA
#endif

#ifdef TP_HAVE_CUDA
/**
 * tp_cuda_conv_workspace() - the scratch the cuDNN algorithms chosen for
 * @p need, forward and backward (the larger), chosen within @limit bytes
 * (0: any) for @math, as a launch with that workspace_max and math
 * chooses them.
 * Return: 0 or -errno.
 */
int tp_cuda_conv_workspace(const struct tp_conv2d_params *p, size_t limit,
			   enum tp_op_math math, size_t *bytes);
#endif

/* CPU GEMM on row-major matrices: C = alpha op(A) op(B) + beta C. */
void tp_cpu_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
		  const float *a, const float *b, float beta, float *c);

#ifdef __cplusplus
}
#endif

#endif /* TP_KERNELS_KERNEL_H */
