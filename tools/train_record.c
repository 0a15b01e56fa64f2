// SPDX-License-Identifier: MIT
/*
 * The op recorder of tpager-train (see tools/train.h): the --wrap targets
 * of tp_tensor_create, tp_tensor_free and tp_op_run, and the map from the
 * program's tensor handles to trace ids; and the deadline that the
 * tp_op_run wrap holds runs to.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx/ctx.h"
#include "kernels/ops.h"
#include "tools/train.h"
#include "trace/trace_gen.h"
#include "vmm/vmm.h"

struct tp_tensor *__real_tp_tensor_create(struct tp_ctx *ctx, size_t bytes,
					  unsigned flags);
int __real_tp_tensor_free(struct tp_ctx *ctx, struct tp_tensor *t);
int __real_tp_op_run(struct tp_ctx *ctx, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *inputs, unsigned n_in,
		     struct tp_tensor **outputs, const size_t *out_bytes,
		     unsigned n_out);
struct tp_tensor *__wrap_tp_tensor_create(struct tp_ctx *ctx, size_t bytes,
					  unsigned flags);
int __wrap_tp_tensor_free(struct tp_ctx *ctx, struct tp_tensor *t);
int __wrap_tp_op_run(struct tp_ctx *ctx, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *inputs, unsigned n_in,
		     struct tp_tensor **outputs, const size_t *out_bytes,
		     unsigned n_out);

struct slot {
	const struct tp_tensor *key;	/* NULL: empty */
	uint32_t id;
};

/* One recorder per process: the wrapped symbols are global too. */
static struct {
	struct tp_trace *t;
	struct tp_ctx *ctx;
	enum tp_rec_cost cost;
	int err;
	unsigned depth;		/* inside tp_op_run: the library's own calls */
	struct slot *map;
	size_t cap, used;	/* cap is a power of two */
} rec;

static size_t slot_of(const struct tp_tensor *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (rec.cap - 1);
}

static struct slot *map_find(const struct tp_tensor *p)
{
	size_t i;

	if (!rec.cap)
		return NULL;
	for (i = slot_of(p); rec.map[i].key; i = (i + 1) & (rec.cap - 1))
		if (rec.map[i].key == p)
			return &rec.map[i];
	return NULL;
}

static int map_grow(void)
{
	struct slot *old = rec.map;
	size_t old_cap = rec.cap, i, j;

	rec.cap = old_cap ? old_cap * 2 : 1024;
	rec.map = calloc(rec.cap, sizeof(*rec.map));
	if (!rec.map) {
		rec.map = old;
		rec.cap = old_cap;
		return -ENOMEM;
	}
	for (i = 0; i < old_cap; i++) {
		if (!old[i].key)
			continue;
		for (j = slot_of(old[i].key); rec.map[j].key;
		     j = (j + 1) & (rec.cap - 1))
			;
		rec.map[j] = old[i];
	}
	free(old);
	return 0;
}

static int map_put(const struct tp_tensor *p, uint32_t id)
{
	struct slot *s = map_find(p);
	size_t i;

	if (s) {
		s->id = id;
		return 0;
	}
	if (2 * (rec.used + 1) > rec.cap && map_grow())
		return -ENOMEM;
	for (i = slot_of(p); rec.map[i].key; i = (i + 1) & (rec.cap - 1))
		;
	rec.map[i].key = p;
	rec.map[i].id = id;
	rec.used++;
	return 0;
}

/* Linear-probing deletion: shift back the entries after the hole. */
static void map_del(struct slot *s)
{
	size_t i = (size_t)(s - rec.map), j = i, k;

	rec.map[i].key = NULL;
	rec.used--;
	for (;;) {
		j = (j + 1) & (rec.cap - 1);
		if (!rec.map[j].key)
			return;
		k = slot_of(rec.map[j].key);
		/* leave it when its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		rec.map[i] = rec.map[j];
		rec.map[j].key = NULL;
		i = j;
	}
}

static unsigned trace_flags(unsigned f)
{
	unsigned r = 0;

	if (f & TP_KIND_INPUT)
		r |= TP_TRACE_INPUT;
	if (f & TP_KIND_PARAM)
		r |= TP_TRACE_PARAM;
	if (f & TP_KIND_GRAD)
		r |= TP_TRACE_GRAD;
	if (f & TP_KIND_OPTSTATE)
		r |= TP_TRACE_OPTSTATE;
	if (f & TP_KIND_ACT)
		r |= TP_TRACE_ACTIVATION;
	return r;
}

static void fail(int rc)
{
	if (!rec.err)
		rec.err = rc;
}

/* The id of @p, adding it as a created tensor if it predates recording. */
static int id_of(const struct tp_tensor *p, uint32_t *id)
{
	struct slot *s = map_find(p);
	int rc;

	if (s) {
		*id = s->id;
		return 0;
	}
	rc = tp_trace_add_tensor(rec.t, tp_tensor_size(p),
				 trace_flags(tp_tensor_flags(p)),
				 TP_TRACE_NONE, id);
	return rc ? rc : map_put(p, *id);
}

int tp_rec_start(struct tp_ctx *ctx, enum tp_rec_cost cost)
{
	if (rec.t)
		return -EBUSY;
	rec.t = tp_trace_new();
	if (!rec.t)
		return -ENOMEM;
	rec.ctx = ctx;
	rec.cost = cost;
	rec.err = 0;
	rec.depth = 0;
	return 0;
}

int tp_rec_iteration(bool measured)
{
	if (!rec.t)
		return -EINVAL;
	if (measured && !rec.t->measured)
		fail(tp_trace_add_mark(rec.t, TP_TRACE_EV_MEASURE_BEGIN));
	fail(tp_trace_add_mark(rec.t, TP_TRACE_EV_ITER));
	return rec.err;
}

int tp_rec_stop(struct tp_trace **out)
{
	int rc = rec.err;

	*out = NULL;
	if (!rec.t)
		return -EINVAL;
	if (rc)
		tp_trace_free(rec.t);
	else
		*out = rec.t;
	rec.t = NULL;
	free(rec.map);
	rec.map = NULL;
	rec.cap = rec.used = 0;
	return rc;
}

struct tp_tensor *__wrap_tp_tensor_create(struct tp_ctx *ctx, size_t bytes,
					  unsigned flags)
{
	struct tp_tensor *t = __real_tp_tensor_create(ctx, bytes, flags);
	uint32_t id;
	int rc;

	if (!t || !rec.t || rec.depth || rec.err)
		return t;
	rc = tp_trace_add_tensor(rec.t, bytes, trace_flags(flags),
				 TP_TRACE_NONE, &id);
	fail(rc ? rc : map_put(t, id));
	return t;
}

int __wrap_tp_tensor_free(struct tp_ctx *ctx, struct tp_tensor *t)
{
	struct slot *s = NULL;
	int rc;

	if (rec.t && !rec.depth && !rec.err)
		s = map_find(t);
	rc = __real_tp_tensor_free(ctx, t);
	if (!rc && s) {
		fail(tp_trace_add_free(rec.t, s->id));
		map_del(s);
	}
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The split marks of the op just appended, when its type says how a run
 * with these sizes is cut (tp_op_run(3), Split): the simulator then splits
 * it as the library would. A cut the trace cannot hold is left out; the op
 * stays, whole.
 */
static void record_split(const struct tp_op_type *type, const void *params,
			 size_t params_len, struct tp_tensor *const *inputs,
			 unsigned n_in, const size_t *out_bytes,
			 unsigned n_out)
{
	size_t in_bytes[TP_TRACE_MAX_ARGS];
	struct tp_op_split s = { 0 };

	if (!(type->flags & TP_OP_SPLITTABLE) || !type->split ||
	    (type->flags & TP_OP_INPLACE))
		return;
	for (unsigned i = 0; i < n_in; i++)
		in_bytes[i] = tp_tensor_size(inputs[i]);
	if (type->split(params, params_len, in_bytes, n_in, out_bytes, n_out,
			&s))
		return;
	if (tp_trace_set_split(rec.t, (uint32_t)rec.t->n_ops - 1, s.rows, s.in,
			       s.out))
		return;
	tp_trace_set_split_kind(rec.t, (uint32_t)rec.t->n_ops - 1,
				type->flags & TP_OP_SPLIT_LOCAL,
				s.sums ? (s.passes ? s.passes : 1) : 0,
				s.sums ? (uint32_t)s.granule : 0);
}

/*
 * What a replay should charge for the op: on sim with a profile of a GPU,
 * the profile's time for it, as the sim charged it in this run (the
 * op's work, tp_vmm_type_ns()); else the roofline model.
 */
static uint64_t modelled_ns(const struct tp_op_type *type,
			    const void *params, size_t params_len,
			    struct tp_tensor *const *inputs, unsigned n_in,
			    uint64_t ib, uint64_t ob)
{
	size_t in_bytes[TP_TRACE_MAX_ARGS];
	uint64_t ns;

	for (unsigned i = 0; i < n_in; i++)
		in_bytes[i] = tp_tensor_size(inputs[i]);
	if (!tp_vmm_type_ns(rec.ctx->vmm, type, params, params_len, in_bytes,
			    n_in, &ns))
		return ns;
	return tp_rec_model_cost(type->name, params, params_len, ib, ob);
}

/* Append the op that just ran; its outputs are in @outputs. */
static int record_op(const struct tp_op_type *type, const void *params,
		     size_t params_len, struct tp_tensor *const *inputs,
		     unsigned n_in, struct tp_tensor **outputs,
		     const size_t *out_bytes, unsigned n_out, uint64_t ns)
{
	uint32_t args[TP_TRACE_MAX_ARGS], first;
	struct tp_trace_out_spec outs[TP_TRACE_MAX_OUTS];
	uint64_t ib = 0, ob = 0;
	bool bwd = strstr(type->name, "_bwd") != NULL;
	unsigned i, j;
	int rc;

	if (n_in > TP_TRACE_MAX_ARGS || n_out > TP_TRACE_MAX_OUTS)
		return -E2BIG;
	for (i = 0; i < n_in; i++) {
		rc = id_of(inputs[i], &args[i]);
		if (rc)
			return rc;
		ib += tp_tensor_size(inputs[i]);
	}
	for (i = 0; i < n_out; i++) {
		outs[i] = (struct tp_trace_out_spec){
			.size = out_bytes[i], .kind = TP_TRACE_OUT_FRESH,
			.flags = TP_TRACE_COMPUTABLE |
				 (bwd ? TP_TRACE_GRAD : TP_TRACE_ACTIVATION),
		};
		ob += out_bytes[i];
		/* an in-place update hands back the input it overwrote */
		for (j = 0; j < n_in; j++) {
			if (outputs[i] != inputs[j])
				continue;
			outs[i].kind = TP_TRACE_OUT_INPLACE;
			outs[i].alias = (uint8_t)j;
			outs[i].flags = (uint16_t)trace_flags(
				tp_tensor_flags(inputs[j]));
			if (!(tp_tensor_flags(inputs[j]) & TP_UNCOMPUTABLE))
				outs[i].flags |= TP_TRACE_COMPUTABLE;
			break;
		}
	}
	if (rec.cost == TP_REC_MODELLED)
		ns = modelled_ns(type, params, params_len, inputs, n_in, ib,
				 ob);
	rc = tp_trace_add_op(rec.t, type->name, strlen(type->name), ns, args,
			     n_in, outs, n_out, &first);
	if (!rc)
		record_split(type, params, params_len, inputs, n_in, out_bytes,
			     n_out);
	for (i = 0; !rc && i < n_out; i++)
		rc = map_put(outputs[i], first + i);
	return rc;
}

/* CLOCK_MONOTONIC ns after which the program's ops fail; 0: none. */
static uint64_t deadline_ns;

void tp_rec_deadline(uint64_t ns)
{
	deadline_ns = ns;
}

int __wrap_tp_op_run(struct tp_ctx *ctx, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *inputs, unsigned n_in,
		     struct tp_tensor **outputs, const size_t *out_bytes,
		     unsigned n_out)
{
	bool on = rec.t && !rec.depth && !rec.err;
	uint64_t t0 = 0;
	int rc;

	/* Refused before it starts, an op leaves every tensor as it was. */
	if (deadline_ns && !rec.depth && now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	if (on && rec.cost == TP_REC_MEASURED) {
		/* time the op alone, not the queue before it */
		fail(tp_sync(rec.ctx));
		t0 = now_ns();
	}
	rec.depth++;
	rc = __real_tp_op_run(ctx, type, params, params_len, inputs, n_in,
			      outputs, out_bytes, n_out);
	rec.depth--;
	if (rc || !on)
		return rc;
	if (rec.cost == TP_REC_MEASURED)
		fail(tp_sync(rec.ctx));
	fail(record_op(type, params, params_len, inputs, n_in, outputs,
		       out_bytes, n_out, t0 ? now_ns() - t0 : 0));
	return rc;
}

/* --- the cost model ------------------------------------------------------ */

/*
 * FLOPs of the ops that run on tensor cores (convolutions and matrix
 * products: a backward pass computes both the input's and the weights'
 * gradient, twice the forward's work); every other op is bound by memory
 * and charged a few FLOPs an element on the FP32 units. Bytes are what
 * the op reads and writes once.
 */
uint64_t tp_rec_model_cost(const char *name, const void *params,
			   size_t params_len, uint64_t in_bytes,
			   uint64_t out_bytes)
{
	double bytes = (double)(in_bytes + out_bytes), flops, mult;
	size_t len = strlen(name);

	mult = len > 4 && !strcmp(name + len - 4, "_bwd") ? 2.0 : 1.0;
	if (!strncmp(name, "conv2d", 6) &&
	    params_len == sizeof(struct tp_conv2d_params)) {
		const struct tp_conv2d_params *p = params;
		double oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
		double ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

		flops = 2.0 * p->n * p->k * oh * ow * p->c * p->r * p->s;
		return tp_trace_gen_cost(mult * flops, bytes, true);
	}
	if (!strncmp(name, "linear", 6) &&
	    params_len == sizeof(struct tp_linear_params)) {
		const struct tp_linear_params *p = params;

		flops = 2.0 * p->n * p->in * p->out;
		return tp_trace_gen_cost(mult * flops, bytes, true);
	}
	if (!strncmp(name, "gemm", 4) &&
	    params_len == sizeof(struct tp_gemm_params)) {
		const struct tp_gemm_params *p = params;

		flops = 2.0 * p->batch * p->m * p->n * p->k;
		return tp_trace_gen_cost(mult * flops, bytes, true);
	}
	/* elementwise, normalisation, pooling, softmax, optimizer: ~4/elt */
	return tp_trace_gen_cost(4.0 * bytes / TP_TRACE_GEN_ELEM, bytes,
				 false);
}
