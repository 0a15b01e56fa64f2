/* SPDX-License-Identifier: MIT */
/*
 * Synthetic training iterations for the policy comparison: CNN-like
 * (residual conv blocks) and transformer-like (pre-norm attention + MLP
 * layers) op sequences with forward activations kept for backward,
 * parameters, gradients and optimizer updates in place, costed by a
 * roofline model of an H100 (trace/trace_gen.c states the figures).
 */
#ifndef TP_TRACE_TRACE_GEN_H
#define TP_TRACE_TRACE_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"

enum tp_trace_gen_model {
	TP_TRACE_GEN_CNN,
	TP_TRACE_GEN_TRANSFORMER,
};

enum tp_trace_gen_optim {
	TP_TRACE_GEN_SGD,	/* with momentum: one state tensor a parameter */
	TP_TRACE_GEN_ADAM,	/* two state tensors a parameter */
};

struct tp_trace_gen_opts {
	enum tp_trace_gen_model model;
	enum tp_trace_gen_optim optim;
	unsigned batch;
	unsigned layers;	/* CNN: residual blocks; transformer: layers */
	unsigned width;		/* CNN: first channels; transformer: hidden */
	unsigned extent;	/* CNN: image side; transformer: sequence length */
	unsigned heads;		/* transformer: attention heads (divides width) */
	unsigned classes;	/* CNN: classes; transformer: vocabulary */
	unsigned iterations;	/* the last one is the measured region */
};

/* Every tensor element is 4 bytes (FP32 storage, TF32 tensor-core math). */
#define TP_TRACE_GEN_ELEM 4

/**
 * tp_trace_gen_cost() - modelled time of an op doing @flops floating-point
 * operations (on tensor cores if @tensor_core) and moving @bytes through
 * device memory: the roofline bound plus a fixed launch cost.
 */
uint64_t tp_trace_gen_cost(double flops, double bytes, bool tensor_core);

/**
 * tp_trace_generate() - build the trace of @o->iterations training steps.
 * @o:   the model; all sizes non-zero, heads dividing width, at most 64
 *       layers; the CNN halves the side and doubles the channels twice
 *       (three stages), so extent must be a multiple of 4
 * @out: set to the new trace
 *
 * Parameters and optimizer state are created before iteration 0 and live
 * throughout; each iteration creates its batch, runs forward and backward,
 * updates every parameter in place and frees everything else it made, so
 * every iteration starts with the same live bytes.
 *
 * Return: 0; -EINVAL bad options; -ENOMEM.
 */
int tp_trace_generate(const struct tp_trace_gen_opts *o,
		      struct tp_trace **out);

#endif /* TP_TRACE_TRACE_GEN_H */
