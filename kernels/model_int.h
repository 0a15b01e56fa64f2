/* SPDX-License-Identifier: MIT */
/*
 * Inside the models: the tape that a forward pass records and the
 * backward pass replays in reverse (model_tape.c), and the architectures
 * (models.c) written against it.
 */
#ifndef TP_KERNELS_MODEL_INT_H
#define TP_KERNELS_MODEL_INT_H

#include <stdbool.h>

#include "kernels/models.h"
#include "kernels/ops.h"

#define TP_TAPE_MAX_IN	6
#define TP_TAPE_MAX_OUT	4

/* A tensor of the step or a parameter, with its gradient. */
struct tp_mvar {
	struct tp_tensor *t;
	struct tp_tensor *grad;
	size_t bytes;
	unsigned refs;		/* tape entries that still need it */
	bool param;		/* the model's: the step never frees it */
	bool needs_grad;
};

struct tp_mparam {
	struct tp_mvar v;
	struct tp_tensor *state;	/* velocity, or Adam's m then v */
	struct tp_tensor *kept;		/* check_grads: the last gradient */
	uint32_t count;
};

union tp_op_params {
	struct tp_linear_params linear;
	struct tp_gemm_params gemm;
	struct tp_conv2d_params conv;
	struct tp_batchnorm_params bn;
	struct tp_eltwise_params ew;
	struct tp_pool_params pool;
	struct tp_gap_params gap;
	struct tp_softmax_params sm;
	struct tp_layernorm_params ln;
	struct tp_xent_params xent;
	struct tp_embedding_params emb;
	struct tp_transpose_params tr;
	struct tp_synth_params synth;
};

struct tp_tape_ent {
	const struct tp_op_type *bwd;
	const char *bwd_in, *bwd_out;
	union tp_op_params p;
	size_t plen;
	struct tp_mvar *in[TP_TAPE_MAX_IN], *out[TP_TAPE_MAX_OUT];
	unsigned n_in, n_out;
};

enum tp_init { TP_INIT_ZERO, TP_INIT_ONE, TP_INIT_NORMAL };

struct tp_model {
	struct tp_ctx *ctx;
	struct tp_vmm *vmm;		/* @ctx's backend (workspaces) */
	struct tp_model_opts o;
	bool adam;
	bool no_data;			/* sim backend: shapes and costs only */
	int (*forward)(struct tp_model *m, struct tp_mvar **loss);
	/* parameters, in the order the forward pass asks for them */
	struct tp_mparam **params;
	unsigned n_params, cap_params, next_param;
	/* this step's tensors and tape */
	struct tp_mvar **vars;
	unsigned n_vars, cap_vars;
	struct tp_tape_ent *tape;
	unsigned n_tape, cap_tape;
	struct tp_tensor *one;		/* d loss / d loss */
	/* cuDNN scratch shared by every convolution, grown between steps */
	struct tp_mvar ws;
	size_t ws_need;
	int err;			/* first failure of this step */
	unsigned step;
	uint64_t rng, init_rng;
	uint64_t rng0;			/* rng after setup: the first batch */
	/* synthetic data */
	uint32_t in_c, in_h, in_w;	/* image or vector input */
	int32_t *teacher;		/* bert: class of each token */
	double *zipf_cdf;		/* bert: P(token <= i) */
};

/* model_tape.c */
uint64_t tp_model_rand(uint64_t *state);
float tp_model_normal(uint64_t *state);

/**
 * tp_model_op() - run forward op @name through tp_op_run() and record it.
 * @out: filled with every output (room for TP_TAPE_MAX_OUT), or NULL.
 *
 * Return: output 0, or NULL after recording the error in m->err. Any NULL
 * input makes it return NULL at once, so a forward pass is written as a
 * straight sequence of calls and checked once at the end.
 */
struct tp_mvar *tp_model_op(struct tp_model *m, const char *name,
			    const void *params, size_t plen,
			    struct tp_mvar *const *in, unsigned n_in,
			    struct tp_mvar **out);

/**
 * tp_model_param() - the next parameter of @count floats, created and
 * initialised (N(0, @std^2) for TP_INIT_NORMAL) on the first step.
 */
struct tp_mvar *tp_model_param(struct tp_model *m, uint32_t count,
			       enum tp_init init, float std);

/**
 * tp_model_input() - a step tensor holding @bytes of host @data; without
 * data (m->no_data) @data is not read and may be NULL.
 */
struct tp_mvar *tp_model_input(struct tp_model *m, const void *data,
			       size_t bytes);

int tp_model_backward(struct tp_model *m, struct tp_mvar *loss);
int tp_model_optimize(struct tp_model *m);
/**
 * tp_model_workspace() - note that op @type with @params wants a
 * workspace; return the shared one if it is large enough, else NULL (the
 * op then allocates its own, and the next step has a larger one).
 */
struct tp_mvar *tp_model_workspace(struct tp_model *m,
				   const struct tp_op_type *type,
				   const void *params, size_t plen);

/*
 * tp_model_done() - the forward pass reads @v no more: its tensor is freed
 * now if no backward op reads it either (else once the last has run).
 */
void tp_model_done(struct tp_model *m, struct tp_mvar *v);

/* Free every tensor of the step and forget the tape; grow the workspace. */
void tp_model_end_step(struct tp_model *m);
void tp_model_free_params(struct tp_model *m);

#endif /* TP_KERNELS_MODEL_INT_H */
