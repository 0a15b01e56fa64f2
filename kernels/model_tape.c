// SPDX-License-Identifier: MIT
/*
 * The models' tape: a forward pass runs each op through tp_op_run() at
 * once and records what its backward op will need; the backward pass walks
 * the tape in reverse, accumulates gradients (with the add op where a
 * tensor feeds several ops: residual branches), and frees each activation
 * as soon as neither the forward pass (tp_model_done()) nor a remaining
 * backward op reads it, as a framework would.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "kernels/model_int.h"

/*
 * What each forward op's backward op takes and gives (see ops.h): tokens
 * of two characters, d (the gradient of an output), i (an input) or o (an
 * output) and its index. A tensor is kept for the backward pass only if
 * a token names it. ReLU's mask is taken from its output (x > 0 is
 * y > 0, bit for bit), as autograd does: its input, a batch-norm's
 * output, is then read by nothing after the forward ReLU.
 */
static const struct {
	const char *fwd, *bwd, *bwd_in, *bwd_out;
} grad_table[] = {
	{ "linear", "linear_bwd", "d0 i0 i1", "0 1 2" },
	{ "gemm", "gemm_bwd", "d0 i0 i1", "0 1" },
	{ "conv2d", "conv2d_bwd", "d0 i0 i1", "0 1 2" },
	{ "batchnorm", "batchnorm_bwd", "d0 i0 i1 o1 o2", "0 1 2" },
	{ "relu", "relu_bwd", "d0 o0", "0" },
	{ "gelu", "gelu_bwd", "d0 i0", "0" },
	{ "maxpool", "maxpool_bwd", "d0 i0 o0", "0" },
	{ "avgpool", "avgpool_bwd", "d0", "0" },
	{ "global_avgpool", "global_avgpool_bwd", "d0", "0" },
	{ "softmax", "softmax_bwd", "d0 o0", "0" },
	{ "layernorm", "layernorm_bwd", "d0 i0 i1 o1 o2", "0 1 2" },
	{ "cross_entropy", "cross_entropy_bwd", "d0 o1 i1", "0" },
	{ "embedding", "embedding_bwd", "d0 i1", "0" },
	{ "transpose12", "transpose12_bwd", "d0", "0" },
	{ "add", "add_bwd", "d0", "0 1" },
	{ "scale", "scale_bwd", "d0", "0" },
};

#define ARRAY_SIZE_GRAD (sizeof(grad_table) / sizeof(grad_table[0]))

uint64_t tp_model_rand(uint64_t *state)
{
	/* splitmix64 */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float tp_model_normal(uint64_t *state)
{
	double u = ((tp_model_rand(state) >> 11) + 1.0) / 9007199254740993.0;
	double v = (tp_model_rand(state) >> 11) / 9007199254740992.0;

	return (float)(sqrt(-2.0 * log(u)) * cos(2 * M_PI * v));
}

static int grow(void **arr, unsigned *cap, unsigned need, size_t elem)
{
	unsigned n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, (size_t)n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static void fail(struct tp_model *m, int err)
{
	if (!m->err)
		m->err = err ? err : -EIO;
}

static struct tp_mvar *new_var(struct tp_model *m, struct tp_tensor *t,
			       size_t bytes)
{
	struct tp_mvar *v;

	if (grow((void **)&m->vars, &m->cap_vars, m->n_vars + 1,
		 sizeof(*m->vars)))
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->t = t;
	v->bytes = bytes;
	v->needs_grad = true;
	m->vars[m->n_vars++] = v;
	return v;
}

struct tp_mvar *tp_model_input(struct tp_model *m, const void *data,
			       size_t bytes)
{
	struct tp_tensor *t;
	struct tp_mvar *v;
	int rc;

	if (m->err)
		return NULL;
	t = tp_tensor_create(m->ctx, bytes, TP_UNCOMPUTABLE | TP_KIND_INPUT);
	if (!t) {
		fail(m, -errno);
		return NULL;
	}
	rc = m->no_data ? 0 : tp_tensor_write(m->ctx, t, 0, data, bytes);
	v = rc ? NULL : new_var(m, t, bytes);
	if (!v) {
		tp_tensor_free(m->ctx, t);
		fail(m, rc ? rc : -ENOMEM);
		return NULL;
	}
	v->needs_grad = false;
	return v;
}

struct tp_mvar *tp_model_param(struct tp_model *m, uint32_t count,
			       enum tp_init init, float std)
{
	size_t bytes = (size_t)count * sizeof(float);
	size_t state = (m->adam ? 2 : 1) * bytes;
	struct tp_mparam *p;
	float *host;
	uint32_t i;
	int rc = -ENOMEM;

	if (m->err)
		return NULL;
	if (m->next_param < m->n_params) {
		p = m->params[m->next_param++];
		if (p->count != count) {
			fail(m, -EINVAL);
			return NULL;
		}
		return &p->v;
	}
	if (grow((void **)&m->params, &m->cap_params, m->n_params + 1,
		 sizeof(*m->params)))
		goto err;
	p = calloc(1, sizeof(*p));
	/* without data (sim) there is nothing to initialise */
	host = m->no_data ? NULL : calloc(1, state > bytes ? state : bytes);
	if (!p || (!host && !m->no_data))
		goto err_free;
	for (i = 0; host && i < count; i++)
		host[i] = init == TP_INIT_ONE ? 1.0f :
			  init == TP_INIT_NORMAL ?
			  std * tp_model_normal(&m->init_rng) : 0.0f;
	p->v.t = tp_tensor_create(m->ctx, bytes,
				  TP_UNCOMPUTABLE | TP_KIND_PARAM);
	p->state = tp_tensor_create(m->ctx, state,
				    TP_UNCOMPUTABLE | TP_KIND_OPTSTATE);
	if (!p->v.t || !p->state) {
		rc = -errno;
		goto err_tensors;
	}
	rc = host ? tp_tensor_write(m->ctx, p->v.t, 0, host, bytes) : 0;
	if (host && !rc) {
		memset(host, 0, state);
		rc = tp_tensor_write(m->ctx, p->state, 0, host, state);
	}
	if (rc)
		goto err_tensors;
	free(host);
	p->v.bytes = bytes;
	p->v.param = true;
	p->v.needs_grad = true;
	p->count = count;
	m->params[m->n_params++] = p;
	m->next_param = m->n_params;
	return &p->v;
err_tensors:
	if (p->v.t)
		tp_tensor_free(m->ctx, p->v.t);
	if (p->state)
		tp_tensor_free(m->ctx, p->state);
err_free:
	free(host);
	free(p);
err:
	fail(m, rc);
	return NULL;
}

struct tp_mvar *tp_model_workspace(struct tp_model *m,
				   const struct tp_op_type *type,
				   const void *params, size_t plen)
{
	size_t need = 0;

	/* 0 off the cuda backend; a failed query just means none */
	if (tp_kernels_workspace_bytes(m->vmm, type, params, plen, &need) ||
	    !need)
		return NULL;
	if (need > m->ws_need)
		m->ws_need = need;
	return m->ws.t && m->ws.bytes >= need ? &m->ws : NULL;
}

static void put_var(struct tp_model *m, struct tp_mvar *v)
{
	if (v->refs && --v->refs)
		return;
	if (!v->param && v->t) {
		tp_tensor_free(m->ctx, v->t);
		v->t = NULL;
	}
}

void tp_model_done(struct tp_model *m, struct tp_mvar *v)
{
	if (v && !v->refs)
		put_var(m, v);
}

/* Whether @e's backward op reads its @kind ('i' or 'o') tensor @k. */
static bool tape_reads(const struct tp_tape_ent *e, char kind, unsigned k)
{
	for (const char *p = e->bwd_in; p[0] && p[1]; p += p[2] ? 3 : 2)
		if (p[0] == kind && (unsigned)(p[1] - '0') == k)
			return true;
	return false;
}

static void hold(struct tp_model *m, struct tp_mvar *v, int d)
{
	if (d > 0)
		v->refs++;
	else
		put_var(m, v);
}

/* Take (@d = 1) or let go (@d = -1) of what @e's backward op reads. */
static void tape_hold(struct tp_model *m, struct tp_tape_ent *e, int d)
{
	for (unsigned k = 0; k < e->n_in; k++)
		if (tape_reads(e, 'i', k))
			hold(m, e->in[k], d);
	for (unsigned k = 0; k < e->n_out; k++)
		if (tape_reads(e, 'o', k))
			hold(m, e->out[k], d);
}

struct tp_mvar *tp_model_op(struct tp_model *m, const char *name,
			    const void *params, size_t plen,
			    struct tp_mvar *const *in, unsigned n_in,
			    struct tp_mvar **out)
{
	const struct tp_op_type *t = tp_kernels_find(name);
	struct tp_tensor *ti[TP_TAPE_MAX_IN], *to[TP_TAPE_MAX_OUT];
	size_t in_bytes[8], out_bytes[8];
	struct tp_tape_ent *e = NULL;
	struct tp_mvar *ov[TP_TAPE_MAX_OUT] = { 0 };
	unsigned ni, no, k;
	int rc;

	if (m->err)
		return NULL;
	for (k = 0; k < n_in; k++)
		if (!in[k])
			return NULL;
	rc = t ? tp_kernels_shape(t, params, plen, in_bytes, &ni, out_bytes,
				  &no) : -ENOENT;
	/* one more input may be a workspace */
	if (!rc && ((ni != n_in && ni + 1 != n_in) ||
		    no > TP_TAPE_MAX_OUT || n_in > TP_TAPE_MAX_IN ||
		    plen > sizeof(union tp_op_params)))
		rc = -EINVAL;
	if (rc)
		goto err;
	for (k = 0; k < n_in; k++)
		ti[k] = in[k]->t;
	rc = tp_op_run(m->ctx, t, params, plen, ti, n_in, to, out_bytes, no);
	if (rc)
		goto err;
	for (k = 0; k < no; k++) {
		ov[k] = new_var(m, to[k], out_bytes[k]);
		if (!ov[k]) {
			for (; k < no; k++)
				tp_tensor_free(m->ctx, to[k]);
			rc = -ENOMEM;
			goto err;
		}
	}
	for (k = 0; k < ARRAY_SIZE_GRAD; k++)
		if (!strcmp(grad_table[k].fwd, name))
			break;
	if (k < ARRAY_SIZE_GRAD) {
		rc = grow((void **)&m->tape, &m->cap_tape, m->n_tape + 1,
			  sizeof(*m->tape));
		if (rc)
			goto err;
		e = &m->tape[m->n_tape++];
		memset(e, 0, sizeof(*e));
		e->bwd = tp_kernels_find(grad_table[k].bwd);
		e->bwd_in = grad_table[k].bwd_in;
		e->bwd_out = grad_table[k].bwd_out;
		memcpy(&e->p, params, plen);
		e->plen = plen;
		e->n_in = n_in;
		e->n_out = no;
		for (k = 0; k < n_in; k++)
			e->in[k] = in[k];
		for (k = 0; k < no; k++)
			e->out[k] = ov[k];
		tape_hold(m, e, 1);
	}
	/* an output no backward op holds is only the caller's */
	if (out)
		memcpy(out, ov, sizeof(ov));
	return ov[0];
err:
	fail(m, rc);
	return NULL;
}

/* Add @g into @v's gradient. */
static int accumulate(struct tp_model *m, struct tp_mvar *v,
		      struct tp_tensor *g)
{
	struct tp_eltwise_params p = { .count = (uint32_t)(v->bytes / 4) };
	struct tp_tensor *in[2] = { v->grad, g }, *sum;
	int rc;

	if (!v->grad) {
		v->grad = g;
		return 0;
	}
	if (v->bytes / 4 > UINT32_MAX) {
		tp_tensor_free(m->ctx, g);
		return -EOVERFLOW;
	}
	rc = tp_op_run(m->ctx, tp_kernels_find("add"), &p, sizeof(p), in, 2,
		       &sum, &v->bytes, 1);
	tp_tensor_free(m->ctx, g);
	if (rc)
		return rc;
	tp_tensor_free(m->ctx, v->grad);
	v->grad = sum;
	return 0;
}

static int backward_one(struct tp_model *m, struct tp_tape_ent *e)
{
	struct tp_tensor *bin[TP_TAPE_MAX_IN], *bout[TP_TAPE_MAX_OUT];
	size_t in_bytes[8], out_bytes[8];
	unsigned n = 0, ni, no, k;
	int rc;

	/* tokens of 2 characters, one space apart */
	for (k = 0; k < strlen(e->bwd_in); k += 3) {
		unsigned j = (unsigned)(e->bwd_in[k + 1] - '0');

		bin[n++] = e->bwd_in[k] == 'd' ? e->out[j]->grad :
			   e->bwd_in[k] == 'i' ? e->in[j]->t : e->out[j]->t;
	}
	rc = tp_kernels_shape(e->bwd, &e->p, e->plen, in_bytes, &ni,
			      out_bytes, &no);
	if (rc)
		return rc;
	if (tp_model_workspace(m, e->bwd, &e->p, e->plen))
		bin[n++] = m->ws.t;
	rc = tp_op_run(m->ctx, e->bwd, &e->p, e->plen, bin, n, bout,
		       out_bytes, no);
	if (rc)
		return rc;
	for (k = 0; k < no; k++) {
		struct tp_mvar *v = e->in[e->bwd_out[2 * k] - '0'];

		if (!v->needs_grad || rc) {
			tp_tensor_free(m->ctx, bout[k]);
			continue;
		}
		rc = accumulate(m, v, bout[k]);
	}
	return rc;
}

int tp_model_backward(struct tp_model *m, struct tp_mvar *loss)
{
	unsigned i;
	int rc = 0;

	/* the forward pass is over: what no backward op reads goes now */
	for (i = 0; i < m->n_vars; i++)
		tp_model_done(m, m->vars[i]);
	loss->grad = m->one;
	while (m->n_tape) {
		struct tp_tape_ent *e = &m->tape[--m->n_tape];
		struct tp_mvar *y = e->out[0];

		if (y->grad && !rc)
			rc = backward_one(m, e);
		/* output 0's gradient is used up; the others have none */
		if (y->grad && y->grad != m->one)
			tp_tensor_free(m->ctx, y->grad);
		y->grad = NULL;
		tape_hold(m, e, -1);
	}
	for (i = 0; rc && i < m->n_params; i++)
		if (m->params[i]->v.grad) {
			tp_tensor_free(m->ctx, m->params[i]->v.grad);
			m->params[i]->v.grad = NULL;
		}
	return rc;
}

/* The optimizer: the state from the gradient, then the parameter. */
static int optimize_one(struct tp_model *m, struct tp_mparam *p)
{
	union {
		struct tp_sgd_params sgd;
		struct tp_adam_params adam;
	} o;
	size_t plen, sbytes = (m->adam ? 2 : 1) * p->v.bytes;
	struct tp_tensor *in[3], *out;
	int rc;

	if (m->adam) {
		o.adam = (struct tp_adam_params){
			.count = p->count, .lr = m->o.lr, .beta1 = 0.9f,
			.beta2 = 0.999f, .eps = 1e-8f, .step = m->step + 1,
		};
		plen = sizeof(o.adam);
	} else {
		o.sgd = (struct tp_sgd_params){
			.count = p->count, .lr = m->o.lr, .momentum = 0.9f,
		};
		plen = sizeof(o.sgd);
	}
	in[0] = p->state;
	in[1] = p->v.grad;
	in[2] = p->v.t;
	rc = tp_op_run(m->ctx, tp_kernels_find(m->adam ? "adam_moments" :
					       "sgd_momentum"),
		       &o, plen, in, 3, &out, &sbytes, 1);
	if (rc)
		return rc;
	in[0] = p->v.t;
	in[1] = p->state;
	return tp_op_run(m->ctx, tp_kernels_find(m->adam ? "adam" : "sgd"),
			 &o, plen, in, 2, &out, &p->v.bytes, 1);
}

int tp_model_optimize(struct tp_model *m)
{
	unsigned i;
	int rc = 0;

	for (i = 0; i < m->n_params; i++) {
		struct tp_mparam *p = m->params[i];

		if (!p->v.grad)
			continue;
		if (m->o.check_grads) {
			/* kept for tp_model_read_grads(), not applied */
			if (p->kept)
				tp_tensor_free(m->ctx, p->kept);
			p->kept = p->v.grad;
			p->v.grad = NULL;
			continue;
		}
		if (!rc)
			rc = optimize_one(m, p);
		tp_tensor_free(m->ctx, p->v.grad);
		p->v.grad = NULL;
	}
	return rc;
}

void tp_model_end_step(struct tp_model *m)
{
	unsigned i;

	for (i = 0; i < m->n_vars; i++) {
		struct tp_mvar *v = m->vars[i];

		if (v->grad && v->grad != m->one)
			tp_tensor_free(m->ctx, v->grad);
		if (v->t)
			tp_tensor_free(m->ctx, v->t);
		free(v);
	}
	m->n_vars = 0;
	m->n_tape = 0;
	m->next_param = 0;
	/* nothing of the step is left to read the old workspace */
	if (m->ws_need > m->ws.bytes) {
		struct tp_tensor *t = tp_tensor_create(m->ctx, m->ws_need,
				TP_UNCOMPUTABLE | TP_SCRATCH |
				TP_KIND_WORKSPACE);

		if (t) {
			tp_log(TP_LOG_INFO, "model: one convolution workspace of %zu bytes for every convolution",
			       m->ws_need);
			/* Backed now, between steps, not by the next one's
			 * first convolution. */
			if (tp_tensor_acquire(m->ctx, t, TP_WRITE))
				tp_tensor_release(m->ctx, t);
			if (m->ws.t)
				tp_tensor_free(m->ctx, m->ws.t);
			m->ws.t = t;
			m->ws.bytes = m->ws_need;
			m->ws.param = true;
		}
	}
}

void tp_model_free_params(struct tp_model *m)
{
	unsigned i;

	for (i = 0; i < m->n_params; i++) {
		tp_tensor_free(m->ctx, m->params[i]->v.t);
		tp_tensor_free(m->ctx, m->params[i]->state);
		if (m->params[i]->v.grad)
			tp_tensor_free(m->ctx, m->params[i]->v.grad);
		if (m->params[i]->kept)
			tp_tensor_free(m->ctx, m->params[i]->kept);
		free(m->params[i]);
	}
	free(m->params);
	m->params = NULL;
	m->n_params = 0;
	if (m->ws.t)
		tp_tensor_free(m->ctx, m->ws.t);
	m->ws.t = NULL;
}
