// SPDX-License-Identifier: MIT
/*
 * The synthetic training-iteration generator (see trace_gen.h).
 *
 * Cost model: an op takes max(flops / F, bytes / B) + L, with NVIDIA's
 * H100 SXM5 datasheet figures: F = 494.7 TFLOP/s dense TF32 on tensor
 * cores (matmul, bmm, convolution) or 66.9 TFLOP/s FP32 on CUDA cores
 * (everything else), B = 3.35 TB/s of HBM3, and L = 2 us for launching a
 * kernel and its tail. Achieved efficiency is taken as 1: the traces are
 * for comparing policies against the same costs, not for predicting
 * absolute step times.
 *
 * One file, past the usual length: the generators share the cost model
 * and the emitter at the top.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_gen.h"

#define H100_TC_FLOPS	494.7e12
#define H100_FP32_FLOPS	66.9e12
#define H100_HBM_BPS	3.35e12
#define LAUNCH_NS	2000

#define E TP_TRACE_GEN_ELEM
#define NONE TP_TRACE_NONE
#define ACT (TP_TRACE_ACTIVATION | TP_TRACE_COMPUTABLE)
#define GRAD (TP_TRACE_GRAD | TP_TRACE_COMPUTABLE)

uint64_t tp_trace_gen_cost(double flops, double bytes, bool tensor_core)
{
	double f = flops / (tensor_core ? H100_TC_FLOPS : H100_FP32_FLOPS);
	double b = bytes / H100_HBM_BPS;

	return (uint64_t)((f > b ? f : b) * 1e9 + 0.5) + LAUNCH_NS;
}

struct param {
	uint32_t t;		/* current version */
	uint32_t grad;		/* this iteration's gradient, or NONE */
	uint32_t s1, s2;	/* optimizer state (s2: Adam only) */
};

struct gen {
	struct tp_trace *t;
	const struct tp_trace_gen_opts *o;
	int rc;			/* first error; every helper is a no-op after */
	struct param *p;
	unsigned n_p, cap_p;
};

static uint64_t size_of(uint32_t id, const struct gen *g)
{
	return id == NONE ? 0 : g->t->tensors[id].size;
}

static uint32_t op_n(struct gen *g, const char *name, uint64_t cost,
		     const uint32_t *in, unsigned n_in,
		     const struct tp_trace_out_spec *outs, unsigned n_outs)
{
	uint32_t first = NONE;

	if (g->rc)
		return NONE;
	g->rc = tp_trace_add_op(g->t, name, strlen(name), cost, in, n_in,
				outs, n_outs, &first);
	return g->rc ? NONE : first;
}

/* An op with one fresh output. */
static uint32_t op1(struct gen *g, const char *name, uint64_t cost,
		    const uint32_t *in, unsigned n_in, uint64_t size,
		    unsigned flags)
{
	struct tp_trace_out_spec o = { size, (uint16_t)flags,
				       TP_TRACE_OUT_FRESH, 0 };

	return op_n(g, name, cost, in, n_in, &o, 1);
}

/* An op that overwrites its input @k in place. */
static uint32_t op_inplace(struct gen *g, const char *name, uint64_t cost,
			   const uint32_t *in, unsigned n_in, unsigned k)
{
	struct tp_trace_out_spec o;

	if (g->rc)
		return NONE;
	o.size = g->t->tensors[in[k]].size;
	o.flags = g->t->tensors[in[k]].flags;
	o.kind = TP_TRACE_OUT_INPLACE;
	o.alias = (uint8_t)k;
	return op_n(g, name, cost, in, n_in, &o, 1);
}

static void drop(struct gen *g, uint32_t id)
{
	if (!g->rc)
		g->rc = tp_trace_add_free(g->t, id);
}

static uint32_t new_tensor(struct gen *g, uint64_t size, unsigned flags)
{
	uint32_t id = NONE;

	if (!g->rc)
		g->rc = tp_trace_add_tensor(g->t, size, flags, NONE, &id);
	return id;
}

static void mark(struct gen *g, enum tp_trace_event_kind kind)
{
	if (!g->rc)
		g->rc = tp_trace_add_mark(g->t, kind);
}

/* A parameter of @n elements with its optimizer state; returns its index. */
static unsigned new_param(struct gen *g, uint64_t n)
{
	struct param *p;

	if (g->n_p == g->cap_p) {
		unsigned cap = g->cap_p ? g->cap_p * 2 : 64;
		struct param *q = realloc(g->p, cap * sizeof(*q));

		if (!q) {
			g->rc = -ENOMEM;
			return 0;
		}
		g->p = q;
		g->cap_p = cap;
	}
	p = &g->p[g->n_p];
	p->t = new_tensor(g, n * E, TP_TRACE_PARAM);
	p->s1 = new_tensor(g, n * E, TP_TRACE_OPTSTATE);
	p->s2 = g->o->optim == TP_TRACE_GEN_ADAM ?
		new_tensor(g, n * E, TP_TRACE_OPTSTATE) : NONE;
	p->grad = NONE;
	return g->n_p++;
}

/* Add a gradient of parameter @i, accumulating into an earlier one. */
static void grad_add(struct gen *g, unsigned i, uint32_t grad)
{
	struct param *p = &g->p[i];
	uint64_t b = size_of(grad, g);

	if (g->rc)
		return;
	if (p->grad == NONE) {
		p->grad = grad;
		return;
	}
	p->grad = op_inplace(g, "add_", tp_trace_gen_cost(b / E, 3.0 * b, false),
			     (uint32_t[]){ p->grad, grad }, 2, 0);
	drop(g, grad);
}

/* The optimizer step: every parameter and its state updated in place. */
static void optimizer_step(struct gen *g)
{
	bool adam = g->o->optim == TP_TRACE_GEN_ADAM;

	for (unsigned i = 0; i < g->n_p && !g->rc; i++) {
		struct param *p = &g->p[i];
		uint64_t b = size_of(p->t, g);
		struct tp_trace_out_spec o[3] = {
			{ b, TP_TRACE_PARAM, TP_TRACE_OUT_INPLACE, 0 },
			{ b, TP_TRACE_OPTSTATE, TP_TRACE_OUT_INPLACE, 2 },
			{ b, TP_TRACE_OPTSTATE, TP_TRACE_OUT_INPLACE, 3 },
		};
		uint32_t in[4] = { p->t, p->grad, p->s1, p->s2 };
		uint32_t first;

		if (p->grad == NONE) {
			g->rc = -EINVAL;	/* a parameter nothing used */
			return;
		}
		/* SGD reads p, g, m and writes m, p; Adam also reads/writes v. */
		first = op_n(g, adam ? "adam_" : "sgd_",
			     tp_trace_gen_cost((adam ? 12.0 : 4.0) * b / E,
					       (adam ? 7.0 : 5.0) * b, false),
			     in, adam ? 4 : 3, o, adam ? 3 : 2);
		if (g->rc)
			return;
		drop(g, p->grad);
		p->t = first;
		p->s1 = first + 1;
		if (adam)
			p->s2 = first + 2;
		p->grad = NONE;
	}
}

/* ---------------------------------------------------------------- CNN */

struct block {
	unsigned w1, g1, b1, w2, g2, b2;	/* parameter indices */
	uint32_t in, c1, r1, c2, out;		/* saved for backward */
	bool down;
	uint64_t cin, cout, side_in, side;	/* channels, spatial sides */
};

/* conv3x3 (stride 1 or 2) cost: direct FLOPs, reads in+w, writes out. */
static uint64_t conv_cost(const struct gen *g, uint64_t cin, uint64_t cout,
			  uint64_t side_out, uint64_t in_b, uint64_t w_b,
			  uint64_t out_b, double mult)
{
	double flops = 2.0 * g->o->batch * side_out * side_out * cout * cin * 9;

	return tp_trace_gen_cost(mult * flops, mult * (in_b + w_b + out_b), true);
}

static uint64_t ew_cost(uint64_t bytes, double passes, double flops_per)
{
	return tp_trace_gen_cost(flops_per * bytes / E, passes * bytes, false);
}

/* conv -> bn -> relu_: returns the relu output; saves conv output in *c. */
static uint32_t conv_bn_relu(struct gen *g, uint32_t in, unsigned w,
			     unsigned gm, unsigned bt, uint64_t cin,
			     uint64_t cout, uint64_t side_out, uint32_t *c)
{
	uint64_t out_b = (uint64_t)g->o->batch * cout * side_out * side_out * E;
	uint32_t n;

	*c = op1(g, "conv2d",
		 conv_cost(g, cin, cout, side_out, size_of(in, g),
			   size_of(g->p[w].t, g), out_b, 1),
		 (uint32_t[]){ in, g->p[w].t }, 2, out_b, ACT);
	n = op1(g, "batch_norm", ew_cost(out_b, 3, 8),
		(uint32_t[]){ *c, g->p[gm].t, g->p[bt].t }, 3, out_b, ACT);
	return op_inplace(g, "relu_", ew_cost(out_b, 2, 1),
			  (uint32_t[]){ n }, 1, 0);
}

/*
 * Backward of bn(conv(in)) given @dn = d(bn output): batch_norm_bw, then
 * conv2d_bw (or only its weight half when @in is the batch). Gradients of
 * the parameters are collected; returns d(in) or NONE. Drops nothing the
 * caller passed.
 */
static uint32_t bn_conv_bw(struct gen *g, uint32_t dn, uint32_t c,
			   uint32_t in, unsigned w, unsigned gm, unsigned bt,
			   uint64_t cin, uint64_t cout, uint64_t side_out,
			   bool want_dx)
{
	uint64_t out_b = size_of(c, g);
	uint64_t in_b = size_of(in, g), w_b = size_of(g->p[w].t, g);
	uint64_t pb = size_of(g->p[gm].t, g);
	struct tp_trace_out_spec bn[3] = {
		{ out_b, GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ pb, GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ pb, GRAD, TP_TRACE_OUT_FRESH, 0 },
	};
	struct tp_trace_out_spec cv[2] = {
		{ w_b, GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ in_b, GRAD, TP_TRACE_OUT_FRESH, 0 },
	};
	uint32_t dc, first;

	first = op_n(g, "batch_norm_bw", ew_cost(out_b, 4, 12),
		     (uint32_t[]){ dn, c, g->p[gm].t }, 3, bn, 3);
	if (g->rc)
		return NONE;
	dc = first;
	grad_add(g, gm, first + 1);
	grad_add(g, bt, first + 2);
	first = op_n(g, want_dx ? "conv2d_bw" : "conv2d_bw_weight",
		     conv_cost(g, cin, cout, side_out, in_b, w_b, out_b,
			       want_dx ? 2 : 1),
		     (uint32_t[]){ dc, in, g->p[w].t }, 3, cv, want_dx ? 2 : 1);
	drop(g, dc);
	if (g->rc)
		return NONE;
	grad_add(g, w, first);
	return want_dx ? first + 1 : NONE;
}

/* Backward of relu_(bn(conv(in))) given @dy = d(relu output @r). */
static uint32_t conv_bn_relu_bw(struct gen *g, uint32_t dy, uint32_t r,
				uint32_t c, uint32_t in, unsigned w,
				unsigned gm, unsigned bt, uint64_t cin,
				uint64_t cout, uint64_t side_out,
				bool want_dx)
{
	uint64_t out_b = size_of(r, g);
	uint32_t dn, dx;

	dn = op1(g, "relu_bw", ew_cost(out_b, 3, 1), (uint32_t[]){ dy, r }, 2,
		 out_b, GRAD);
	dx = bn_conv_bw(g, dn, c, in, w, gm, bt, cin, cout, side_out, want_dx);
	drop(g, dn);
	return dx;
}

static void cnn_iteration(struct gen *g, struct block *bl, unsigned stem_w,
			  unsigned stem_g, unsigned stem_b, unsigned fc,
			  uint64_t c_last)
{
	const struct tp_trace_gen_opts *o = g->o;
	uint64_t B = o->batch, C = o->width, H = o->extent, K = o->classes;
	uint32_t x0, labels, stem_c, stem_r, x, pool, logits, loss;
	uint32_t d, dlogits, first;
	uint64_t act_b;

	x0 = new_tensor(g, B * 3 * H * H * E, TP_TRACE_INPUT);
	labels = new_tensor(g, B * E, TP_TRACE_INPUT);

	/* forward */
	stem_r = conv_bn_relu(g, x0, stem_w, stem_g, stem_b, 3, C, H, &stem_c);
	x = stem_r;
	for (unsigned l = 0; l < o->layers && !g->rc; l++) {
		struct block *b = &bl[l];
		uint64_t out_b = B * b->cout * b->side * b->side * E;
		uint32_t n2, skip, sum;

		b->in = x;
		b->r1 = conv_bn_relu(g, x, b->w1, b->g1, b->b1, b->cin,
				     b->cout, b->side, &b->c1);
		b->c2 = op1(g, "conv2d",
			    conv_cost(g, b->cout, b->cout, b->side, out_b,
				      size_of(g->p[b->w2].t, g), out_b, 1),
			    (uint32_t[]){ b->r1, g->p[b->w2].t }, 2, out_b,
			    ACT);
		n2 = op1(g, "batch_norm", ew_cost(out_b, 3, 8),
			 (uint32_t[]){ b->c2, g->p[b->g2].t, g->p[b->b2].t },
			 3, out_b, ACT);
		/* The downsampling skip: a strided pool, channels padded. */
		skip = b->down ? op1(g, "pool_pad", ew_cost(out_b, 2, 1),
				     (uint32_t[]){ x }, 1, out_b, ACT) : x;
		sum = op1(g, "add", ew_cost(out_b, 3, 1),
			  (uint32_t[]){ n2, skip }, 2, out_b, ACT);
		drop(g, n2);
		if (b->down)
			drop(g, skip);
		b->out = op_inplace(g, "relu_", ew_cost(out_b, 2, 1),
				    (uint32_t[]){ sum }, 1, 0);
		x = b->out;
	}
	act_b = size_of(x, g);
	pool = op1(g, "avg_pool", ew_cost(act_b, 1, 1), (uint32_t[]){ x }, 1,
		   B * c_last * E, ACT);
	logits = op1(g, "linear",
		     tp_trace_gen_cost(2.0 * B * c_last * K,
				       (double)(B * c_last + c_last * K + B * K) * E,
				       true),
		     (uint32_t[]){ pool, g->p[fc].t }, 2, B * K * E, ACT);
	loss = op1(g, "cross_entropy", ew_cost(B * K * E, 1, 4),
		   (uint32_t[]){ logits, labels }, 2, E, ACT);

	/* backward */
	mark(g, TP_TRACE_EV_BACKWARD);
	d = op1(g, "ones_like", ew_cost(E, 1, 0), (uint32_t[]){ loss }, 1, E,
		GRAD);
	drop(g, loss);
	dlogits = op1(g, "cross_entropy_bw", ew_cost(B * K * E, 2, 4),
		      (uint32_t[]){ d, logits, labels }, 3, B * K * E, GRAD);
	drop(g, d);
	drop(g, logits);
	{
		struct tp_trace_out_spec lo[2] = {
			{ B * c_last * E, GRAD, TP_TRACE_OUT_FRESH, 0 },
			{ c_last * K * E, GRAD, TP_TRACE_OUT_FRESH, 0 },
		};
		double fc_b = (double)(B * c_last + c_last * K + B * K) * E;

		first = op_n(g, "linear_bw",
			     tp_trace_gen_cost(4.0 * B * c_last * K, 2 * fc_b,
					       true),
			     (uint32_t[]){ dlogits, pool, g->p[fc].t }, 3, lo, 2);
	}
	drop(g, dlogits);
	drop(g, pool);
	if (g->rc)
		return;
	grad_add(g, fc, first + 1);
	d = op1(g, "avg_pool_bw", ew_cost(act_b, 1, 1), (uint32_t[]){ first },
		1, act_b, GRAD);
	drop(g, first);
	for (unsigned l = o->layers; l-- > 0 && !g->rc;) {
		struct block *b = &bl[l];
		uint64_t out_b = size_of(b->out, g);
		uint32_t dsum, dr1, din, dskip;

		dsum = op1(g, "relu_bw", ew_cost(out_b, 3, 1),
			   (uint32_t[]){ d, b->out }, 2, out_b, GRAD);
		drop(g, d);
		drop(g, b->out);
		/* The sum's gradient goes to both branches. */
		dr1 = bn_conv_bw(g, dsum, b->c2, b->r1, b->w2, b->g2, b->b2,
				 b->cout, b->cout, b->side, true);
		drop(g, b->c2);
		din = conv_bn_relu_bw(g, dr1, b->r1, b->c1, b->in, b->w1,
				      b->g1, b->b1, b->cin, b->cout, b->side,
				      true);
		drop(g, dr1);
		drop(g, b->r1);
		drop(g, b->c1);
		if (b->down) {
			dskip = op1(g, "pool_pad_bw", ew_cost(out_b, 2, 1),
				    (uint32_t[]){ dsum }, 1, size_of(b->in, g),
				    GRAD);
			din = op_inplace(g, "add_",
					 ew_cost(size_of(b->in, g), 3, 1),
					 (uint32_t[]){ din, dskip }, 2, 0);
			drop(g, dskip);
		} else {
			din = op_inplace(g, "add_", ew_cost(out_b, 3, 1),
					 (uint32_t[]){ din, dsum }, 2, 0);
		}
		drop(g, dsum);
		d = din;
		/* b->in is the previous block's output (or the stem's). */
	}
	conv_bn_relu_bw(g, d, stem_r, stem_c, x0, stem_w, stem_g, stem_b, 3,
			C, H, false);
	drop(g, d);
	drop(g, stem_r);
	drop(g, stem_c);
	drop(g, x0);
	drop(g, labels);
	optimizer_step(g);
}

static int gen_cnn(struct gen *g)
{
	const struct tp_trace_gen_opts *o = g->o;
	struct block *bl = calloc(o->layers, sizeof(*bl));
	unsigned stem_w, stem_g, stem_b, fc;
	uint64_t c = o->width, side = o->extent;

	if (!bl)
		return -ENOMEM;
	/* Parameters: stem, blocks in three stages, classifier. */
	stem_w = new_param(g, c * 3 * 9);
	stem_g = new_param(g, c);
	stem_b = new_param(g, c);
	for (unsigned l = 0; l < o->layers; l++) {
		unsigned stage = l * 3 / o->layers;
		struct block *b = &bl[l];

		b->down = l && stage != (l - 1) * 3 / o->layers;
		b->cin = c;
		b->side_in = side;
		if (b->down) {
			c *= 2;
			side /= 2;
		}
		b->cout = c;
		b->side = side;
		b->w1 = new_param(g, b->cout * b->cin * 9);
		b->g1 = new_param(g, b->cout);
		b->b1 = new_param(g, b->cout);
		b->w2 = new_param(g, b->cout * b->cout * 9);
		b->g2 = new_param(g, b->cout);
		b->b2 = new_param(g, b->cout);
	}
	fc = new_param(g, c * o->classes);

	for (unsigned it = 0; it < o->iterations && !g->rc; it++) {
		bool last = it == o->iterations - 1;

		mark(g, TP_TRACE_EV_ITER);
		if (last)
			mark(g, TP_TRACE_EV_MEASURE_BEGIN);
		cnn_iteration(g, bl, stem_w, stem_g, stem_b, fc, c);
		if (last)
			mark(g, TP_TRACE_EV_MEASURE_END);
	}
	free(bl);
	return g->rc;
}

/* -------------------------------------------------------- transformer */

struct layer {
	unsigned g1, b1, wqkv, wo, g2, b2, w1, w2;	/* parameters */
	uint32_t x, h, q, k, v, pr, ctx, x1, h2, f1, ge; /* saved */
};

/* X[M,K] x W[K,N] on tensor cores. */
static uint64_t mm_cost(double m, double k, double n, double mult)
{
	return tp_trace_gen_cost(mult * 2 * m * k * n,
				 mult * (m * k + k * n + m * n) * E, true);
}

/* d(X), d(W) of Y = X W, given dY; the weight gradient is collected. */
static uint32_t matmul_bw(struct gen *g, uint32_t dy, uint32_t x, unsigned w,
			  double m, double k, double n)
{
	struct tp_trace_out_spec out[2] = {
		{ size_of(x, g), GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ size_of(g->p[w].t, g), GRAD, TP_TRACE_OUT_FRESH, 0 },
	};
	uint32_t first = op_n(g, "matmul_bw", mm_cost(m, k, n, 2),
			      (uint32_t[]){ dy, x, g->p[w].t }, 3, out, 2);

	if (g->rc)
		return NONE;
	grad_add(g, w, first + 1);
	return first;
}

static uint32_t layernorm_bw(struct gen *g, uint32_t dy, uint32_t x,
			     unsigned gm, unsigned bt)
{
	uint64_t b = size_of(x, g), pb = size_of(g->p[gm].t, g);
	struct tp_trace_out_spec out[3] = {
		{ b, GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ pb, GRAD, TP_TRACE_OUT_FRESH, 0 },
		{ pb, GRAD, TP_TRACE_OUT_FRESH, 0 },
	};
	uint32_t first = op_n(g, "layer_norm_bw", ew_cost(b, 4, 12),
			      (uint32_t[]){ dy, x, g->p[gm].t }, 3, out, 3);

	if (g->rc)
		return NONE;
	grad_add(g, gm, first + 1);
	grad_add(g, bt, first + 2);
	return first;
}

static void tf_iteration(struct gen *g, struct layer *ly, unsigned emb,
			 unsigned pos, unsigned gf, unsigned bf)
{
	const struct tp_trace_gen_opts *o = g->o;
	double B = o->batch, S = o->extent, D = o->width, V = o->classes;
	double nh = o->heads, BS = B * S;
	uint64_t act = (uint64_t)(BS * D) * E;
	uint64_t att = (uint64_t)(B * nh * S * S) * E;
	uint32_t tokens, labels, x, hf, logits, loss, d, dl, dh, first;

	tokens = new_tensor(g, (uint64_t)BS * E, TP_TRACE_INPUT);
	labels = new_tensor(g, (uint64_t)BS * E, TP_TRACE_INPUT);
	x = op1(g, "embedding", ew_cost(2 * act, 1, 1),
		(uint32_t[]){ tokens, g->p[emb].t, g->p[pos].t }, 3, act, ACT);

	for (unsigned l = 0; l < o->layers && !g->rc; l++) {
		struct layer *L = &ly[l];
		struct tp_trace_out_spec qkv_views[3] = {
			{ act, ACT, TP_TRACE_OUT_VIEW, 0 },
			{ act, ACT, TP_TRACE_OUT_VIEW, 0 },
			{ act, ACT, TP_TRACE_OUT_VIEW, 0 },
		};
		uint32_t qkv, sc, at, f2;

		L->x = x;
		L->h = op1(g, "layer_norm", ew_cost(act, 2, 8),
			   (uint32_t[]){ x, g->p[L->g1].t, g->p[L->b1].t }, 3,
			   act, ACT);
		qkv = op1(g, "matmul", mm_cost(BS, D, 3 * D, 1),
			  (uint32_t[]){ L->h, g->p[L->wqkv].t }, 2, 3 * act, ACT);
		/* q, k, v are views into the one projection. */
		L->q = op_n(g, "split", LAUNCH_NS, (uint32_t[]){ qkv }, 1,
			    qkv_views, 3);
		L->k = L->q + 1;
		L->v = L->q + 2;
		drop(g, qkv);
		sc = op1(g, "bmm", tp_trace_gen_cost(2 * BS * S * D,
						     2.0 * act + att, true),
			 (uint32_t[]){ L->q, L->k }, 2, att, ACT);
		L->pr = op1(g, "softmax", ew_cost(att, 2, 5),
			    (uint32_t[]){ sc }, 1, att, ACT);
		drop(g, sc);
		L->ctx = op1(g, "bmm", tp_trace_gen_cost(2 * BS * S * D,
							 2.0 * act + att, true),
			     (uint32_t[]){ L->pr, L->v }, 2, act, ACT);
		at = op1(g, "matmul", mm_cost(BS, D, D, 1),
			 (uint32_t[]){ L->ctx, g->p[L->wo].t }, 2, act, ACT);
		L->x1 = op1(g, "add", ew_cost(act, 3, 1),
			    (uint32_t[]){ x, at }, 2, act, ACT);
		drop(g, at);
		L->h2 = op1(g, "layer_norm", ew_cost(act, 2, 8),
			    (uint32_t[]){ L->x1, g->p[L->g2].t, g->p[L->b2].t },
			    3, act, ACT);
		L->f1 = op1(g, "matmul", mm_cost(BS, D, 4 * D, 1),
			    (uint32_t[]){ L->h2, g->p[L->w1].t }, 2, 4 * act,
			    ACT);
		L->ge = op1(g, "gelu", ew_cost(4 * act, 2, 10),
			    (uint32_t[]){ L->f1 }, 1, 4 * act, ACT);
		f2 = op1(g, "matmul", mm_cost(BS, 4 * D, D, 1),
			 (uint32_t[]){ L->ge, g->p[L->w2].t }, 2, act, ACT);
		x = op1(g, "add", ew_cost(act, 3, 1),
			(uint32_t[]){ L->x1, f2 }, 2, act, ACT);
		drop(g, f2);
	}
	hf = op1(g, "layer_norm", ew_cost(act, 2, 8),
		 (uint32_t[]){ x, g->p[gf].t, g->p[bf].t }, 3, act, ACT);
	/* Output projection tied to the embedding. */
	logits = op1(g, "matmul", mm_cost(BS, D, V, 1),
		     (uint32_t[]){ hf, g->p[emb].t }, 2, (uint64_t)(BS * V) * E,
		     ACT);
	loss = op1(g, "cross_entropy", ew_cost(size_of(logits, g), 1, 4),
		   (uint32_t[]){ logits, labels }, 2, E, ACT);

	/* backward */
	mark(g, TP_TRACE_EV_BACKWARD);
	d = op1(g, "ones_like", ew_cost(E, 1, 0), (uint32_t[]){ loss }, 1, E,
		GRAD);
	drop(g, loss);
	dl = op1(g, "cross_entropy_bw", ew_cost(size_of(logits, g), 2, 4),
		 (uint32_t[]){ d, logits, labels }, 3, size_of(logits, g), GRAD);
	drop(g, d);
	drop(g, logits);
	dh = matmul_bw(g, dl, hf, emb, BS, D, V);
	drop(g, dl);
	drop(g, hf);
	first = layernorm_bw(g, dh, x, gf, bf);
	drop(g, dh);
	drop(g, x);
	d = first;
	for (unsigned l = o->layers; l-- > 0 && !g->rc;) {
		struct layer *L = &ly[l];
		uint32_t dge, df1, dh2, dx1, dctx, dpr, dv, dsc, dq, dqkv, dhh;
		struct tp_trace_out_spec two[2] = {
			{ act, GRAD, TP_TRACE_OUT_FRESH, 0 },
			{ act, GRAD, TP_TRACE_OUT_FRESH, 0 },
		};

		dge = matmul_bw(g, d, L->ge, L->w2, BS, 4 * D, D);
		drop(g, L->ge);
		df1 = op1(g, "gelu_bw", ew_cost(4 * act, 3, 10),
			  (uint32_t[]){ dge, L->f1 }, 2, 4 * act, GRAD);
		drop(g, dge);
		drop(g, L->f1);
		dh2 = matmul_bw(g, df1, L->h2, L->w1, BS, D, 4 * D);
		drop(g, df1);
		drop(g, L->h2);
		dx1 = layernorm_bw(g, dh2, L->x1, L->g2, L->b2);
		drop(g, dh2);
		drop(g, L->x1);
		/* The residual: the incoming gradient adds in. */
		dx1 = op_inplace(g, "add_", ew_cost(act, 3, 1),
				 (uint32_t[]){ dx1, d }, 2, 0);
		drop(g, d);
		dctx = matmul_bw(g, dx1, L->ctx, L->wo, BS, D, D);
		drop(g, L->ctx);
		dpr = op_n(g, "bmm_bw", tp_trace_gen_cost(4 * BS * S * D,
							  2.0 * (2.0 * act + att),
							  true),
			   (uint32_t[]){ dctx, L->pr, L->v }, 3,
			   (struct tp_trace_out_spec[]){
				{ att, GRAD, TP_TRACE_OUT_FRESH, 0 },
				{ act, GRAD, TP_TRACE_OUT_FRESH, 0 } }, 2);
		dv = dpr == NONE ? NONE : dpr + 1;
		drop(g, dctx);
		drop(g, L->v);
		dsc = op1(g, "softmax_bw", ew_cost(att, 3, 5),
			  (uint32_t[]){ dpr, L->pr }, 2, att, GRAD);
		drop(g, dpr);
		drop(g, L->pr);
		dq = op_n(g, "bmm_bw", tp_trace_gen_cost(4 * BS * S * D,
							 2.0 * (2.0 * act + att),
							 true),
			  (uint32_t[]){ dsc, L->q, L->k }, 3, two, 2);
		drop(g, dsc);
		drop(g, L->q);
		drop(g, L->k);
		dqkv = op1(g, "cat", ew_cost(3 * act, 2, 0),
			   (uint32_t[]){ dq, dq == NONE ? NONE : dq + 1, dv }, 3,
			   3 * act, GRAD);
		drop(g, dq);
		drop(g, dq + 1);
		drop(g, dv);
		dhh = matmul_bw(g, dqkv, L->h, L->wqkv, BS, D, 3 * D);
		drop(g, dqkv);
		drop(g, L->h);
		d = layernorm_bw(g, dhh, L->x, L->g1, L->b1);
		drop(g, dhh);
		drop(g, L->x);
		d = op_inplace(g, "add_", ew_cost(act, 3, 1),
			       (uint32_t[]){ d, dx1 }, 2, 0);
		drop(g, dx1);
	}
	{
		struct tp_trace_out_spec eo[2] = {
			{ size_of(g->p[emb].t, g), GRAD, TP_TRACE_OUT_FRESH, 0 },
			{ size_of(g->p[pos].t, g), GRAD, TP_TRACE_OUT_FRESH, 0 },
		};

		first = op_n(g, "embedding_bw",
			     ew_cost(size_of(g->p[emb].t, g) + 2 * act, 1, 1),
			     (uint32_t[]){ d, tokens }, 2, eo, 2);
	}
	drop(g, d);
	drop(g, tokens);
	drop(g, labels);
	if (g->rc)
		return;
	grad_add(g, emb, first);
	grad_add(g, pos, first + 1);
	optimizer_step(g);
}

static int gen_transformer(struct gen *g)
{
	const struct tp_trace_gen_opts *o = g->o;
	uint64_t D = o->width;
	struct layer *ly = calloc(o->layers, sizeof(*ly));
	unsigned emb, pos, gf, bf;

	if (!ly)
		return -ENOMEM;
	emb = new_param(g, (uint64_t)o->classes * D);
	pos = new_param(g, (uint64_t)o->extent * D);
	for (unsigned l = 0; l < o->layers; l++) {
		struct layer *L = &ly[l];

		L->g1 = new_param(g, D);
		L->b1 = new_param(g, D);
		L->wqkv = new_param(g, D * 3 * D);
		L->wo = new_param(g, D * D);
		L->g2 = new_param(g, D);
		L->b2 = new_param(g, D);
		L->w1 = new_param(g, D * 4 * D);
		L->w2 = new_param(g, 4 * D * D);
	}
	gf = new_param(g, D);
	bf = new_param(g, D);
	for (unsigned it = 0; it < o->iterations && !g->rc; it++) {
		bool last = it == o->iterations - 1;

		mark(g, TP_TRACE_EV_ITER);
		if (last)
			mark(g, TP_TRACE_EV_MEASURE_BEGIN);
		tf_iteration(g, ly, emb, pos, gf, bf);
		if (last)
			mark(g, TP_TRACE_EV_MEASURE_END);
	}
	free(ly);
	return g->rc;
}

int tp_trace_generate(const struct tp_trace_gen_opts *o,
		      struct tp_trace **out)
{
	struct gen g = { .o = o };
	int rc;

	if (!o->batch || !o->layers || o->layers > 64 || !o->width ||
	    !o->extent || !o->classes || !o->iterations)
		return -EINVAL;
	switch (o->model) {
	case TP_TRACE_GEN_CNN:
		if (o->extent % 4)
			return -EINVAL;
		break;
	case TP_TRACE_GEN_TRANSFORMER:
		if (!o->heads || o->width % o->heads)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (o->optim != TP_TRACE_GEN_SGD && o->optim != TP_TRACE_GEN_ADAM)
		return -EINVAL;
	g.t = tp_trace_new();
	if (!g.t)
		return -ENOMEM;
	rc = o->model == TP_TRACE_GEN_CNN ? gen_cnn(&g) : gen_transformer(&g);
	free(g.p);
	if (rc) {
		tp_trace_free(g.t);
		return rc;
	}
	*out = g.t;
	return 0;
}
