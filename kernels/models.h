/* SPDX-License-Identifier: MIT */
/*
 * Models built from the op registry: every op goes through tp_op_run(), so
 * the pager sees a real training step (forward, backward, optimizer) and
 * can evict, offload and regenerate what it runs. Parameters and optimizer
 * state are uncomputable tensors updated in place.
 *
 * The data are synthetic but learnable: image and MLP inputs are a fixed
 * random prototype per class plus noise; BERT tokens, drawn by Zipf's law
 * as words occur in text, are labelled by a fixed random teacher table.
 * Everything follows from the seed, so two runs with the same options
 * compute the same bits.
 *
 * On the sim backend, which holds no data, the same ops run with their
 * shapes and costs only: nothing is initialised or read, and the loss is
 * NaN.
 */
#ifndef TP_KERNELS_MODELS_H
#define TP_KERNELS_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "tpager.h"

struct tp_model;

/* Zero fields take the model's default. */
struct tp_model_opts {
	const char *name;	/* mlp, resnet-mini, resnet, vgg16, bert */
	unsigned depth;		/* resnet: 18, 34, 50, 101 (default 50) */
	unsigned batch;
	unsigned image;		/* side of the square input image */
	unsigned classes;
	unsigned layers, hidden, heads, seq, vocab;	/* bert */
	const char *optim;	/* "sgd" (momentum 0.9) or "adam" */
	float lr;
	uint64_t seed;
	/*
	 * For checking gradients: every step draws the same batch, the
	 * optimizer does not run, and the parameters' gradients are kept
	 * for tp_model_read_grads() until the next step.
	 */
	unsigned check_grads;
};

/**
 * tp_model_create() - a model and its synthetic data on @ctx.
 *
 * Parameters and optimizer state are created by the first step.
 * Return: the model, or NULL with errno (EINVAL for an unknown model or
 * options it cannot take, ENOMEM).
 */
struct tp_model *tp_model_create(struct tp_ctx *ctx,
				 const struct tp_model_opts *opts);

/**
 * tp_model_step() - one training step on a fresh batch: forward, backward,
 * optimizer; every activation and gradient is freed before it returns.
 * @loss: the batch's mean loss before the update (may be NULL).
 *
 * Return: 0 or the first -errno of a tp_op_run() (the step is then
 * abandoned: parameters may be partly updated).
 */
int tp_model_step(struct tp_model *m, float *loss);

/** tp_model_param_bytes() - bytes of all parameters (0 before a step). */
size_t tp_model_param_bytes(const struct tp_model *m);

/**
 * tp_model_read_params() - copy every parameter, in creation order, into
 * @buf of @len >= tp_model_param_bytes(). Return: 0 or -errno.
 */
int tp_model_read_params(struct tp_model *m, void *buf, size_t len);

/**
 * tp_model_write_params() - replace every parameter with @len >=
 * tp_model_param_bytes() bytes of @buf, in creation order.
 * Return: 0 or -errno.
 */
int tp_model_write_params(struct tp_model *m, const void *buf, size_t len);

/**
 * tp_model_read_grads() - with check_grads set, copy the gradients of the
 * last step, laid out as tp_model_read_params() lays out the parameters.
 * Return: 0, -EINVAL without check_grads or a step, or -errno.
 */
int tp_model_read_grads(struct tp_model *m, void *buf, size_t len);

/** tp_model_destroy() - free the model's tensors and the model. */
void tp_model_destroy(struct tp_model *m);

#endif /* TP_KERNELS_MODELS_H */
