// SPDX-License-Identifier: MIT
/*
 * Replay of a trace through the public API on the sim backend (replay.h).
 *
 * The library sees storages, not the trace's tensor versions: every view
 * and every version of one storage maps to the one tp_tensor that holds
 * its pages, and a storage is freed when its last live trace tensor is,
 * which is how a framework's reference counting drives an allocator. The
 * cost an op recorded travels in its parameters and comes back from the
 * op type's cost_ns, so the sim charges exactly that time, on first runs
 * and recomputes alike.
 *
 * One file, past the usual length: every function walks the one replay
 * state (storages, versions, the op types made from the trace).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "trace/replay.h"
#include "vmm/vmm.h"

/*
 * Default chunks: 1 MiB, or 64 KiB for a byte-accounted trace (DTR's
 * logs), where 1 MiB rounding moves the unconstrained peak by 0.6% on
 * ResNet-32 and 64 KiB by 0.05%: budget ratios then mean what DTR's do.
 */
#define REPLAY_CHUNK_DEFAULT	(1u << 20)
#define REPLAY_CHUNK_BYTES	(64u << 10)

uint64_t tp_replay_chunk(const struct tp_trace *t,
			 const struct tp_replay_opts *o)
{
	if (o->chunk_size)
		return o->chunk_size;
	return t->byte_accounted ? REPLAY_CHUNK_BYTES : REPLAY_CHUNK_DEFAULT;
}

/* The sim's default driver costs per chunk (vmm.sim.*), for the split. */
#define SIM_MAP_NS		1500
#define SIM_ACCESS_NS		36000
#define SIM_UNMAP_NS		26000

struct rp_storage {
	struct tp_tensor *t;	/* NULL until created, and once freed */
	uint32_t refs;		/* live trace tensors on it */
	uint32_t refs_at_begin;	/* at MEASURE_BEGIN */
	bool in_region;		/* created inside the measured region */
};

/* In-place op types, built on demand: one per (output, input) pair. */
struct rp_inplace_type {
	struct tp_op_type type;
	struct rp_inplace_type *next;
};

struct replay {
	const struct tp_trace *t;
	const struct tp_replay_opts *o;
	struct tp_replay_result *r;
	struct tp_ctx *ctx;
	struct rp_storage *st;
	struct rp_inplace_type *inplace;
	bool in_region, in_iteration;
	bool measuring;		/* past the warm-up passes: counted */
	unsigned warm;		/* warm-up passes (warmup_tuned adds) */
	uint64_t region_compute;	/* of one pass over the region */
	uint64_t recompute_at_begin;
	uint64_t now_at_begin;		/* the clock when measuring began */
	struct timespec wall_at_start;	/* the wall clock when the passes began */
	/* Scratch for one op. */
	struct tp_tensor *in[TP_TRACE_MAX_ARGS];
	struct tp_tensor *out[TP_TRACE_MAX_OUTS];
	size_t out_bytes[TP_TRACE_MAX_OUTS];
};

/* What a replayed op carries: its cost and the trace's split marks. */
struct rp_params {
	uint64_t cost_ns;
	uint64_t rows;		/* 0: it runs whole */
	uint64_t in, out;	/* out: bits of tp_op_run's outputs */
	uint32_t passes, granule;	/* of parts that sum; passes 0: none */
};

static uint64_t op_cost(const void *params, size_t params_len,
			const size_t *in_bytes, unsigned n_in)
{
	struct rp_params p;

	if (params_len != sizeof(p))
		return 0;
	memcpy(&p, params, sizeof(p));
	return p.cost_ns;
}

static int op_split(const void *params, size_t params_len,
		    const size_t *in_bytes, unsigned n_in,
		    const size_t *out_bytes, unsigned n_out,
		    struct tp_op_split *s)
{
	struct rp_params p;

	if (params_len != sizeof(p))
		return -EINVAL;
	memcpy(&p, params, sizeof(p));
	if (!p.rows)
		return -EINVAL;
	s->rows = p.rows;
	s->in = p.in;
	s->out = p.out;
	s->sums = p.passes != 0;
	s->passes = p.passes;
	s->granule = p.granule;
	return 0;
}

/* Never called on sim, which holds no data to compute on. */
static int op_launch(const struct tp_op_launch *l)
{
	return 0;
}

static const struct tp_op_type replay_op = {
	.name = "replay",
	.launch = op_launch,
	.cost_ns = op_cost,
	.flags = TP_OP_SPLITTABLE,
	.split = op_split,
};

/* An op whose parts read their own rows alone (split_local). */
static const struct tp_op_type replay_local_op = {
	.name = "replay",
	.launch = op_launch,
	.cost_ns = op_cost,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL,
	.split = op_split,
};

static const struct tp_op_type *inplace_type(struct replay *rp, int out,
					     int in)
{
	struct rp_inplace_type *it;

	for (it = rp->inplace; it; it = it->next)
		if (it->type.inplace_out == out && it->type.inplace_in == in)
			return &it->type;
	it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->type = replay_op;
	it->type.name = "replay-inplace";
	it->type.flags = TP_OP_INPLACE;
	it->type.split = NULL;
	it->type.inplace_out = out;
	it->type.inplace_in = in;
	it->next = rp->inplace;
	rp->inplace = it;
	return &it->type;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct replay *rp, int err, const char *fmt, ...)
{
	struct tp_replay_result *r = rp->r;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	if (rp->ctx && n >= 0 && (size_t)n < sizeof(r->error) &&
	    tp_last_error(rp->ctx)[0])
		snprintf(r->error + n, sizeof(r->error) - n, ": %s",
			 tp_last_error(rp->ctx));
	r->err = err;
	if (err == -ENOMEM)
		r->status = TP_REPLAY_OOM;
	else
		r->status = TP_REPLAY_ERROR;
	return err;
}

static unsigned kind_flags(unsigned f)
{
	unsigned k = 0;

	if (f & TP_TRACE_INPUT)
		k |= TP_KIND_INPUT;
	if (f & TP_TRACE_PARAM)
		k |= TP_KIND_PARAM;
	if (f & TP_TRACE_GRAD)
		k |= TP_KIND_GRAD;
	if (f & TP_TRACE_OPTSTATE)
		k |= TP_KIND_OPTSTATE;
	if (f & TP_TRACE_ACTIVATION)
		k |= TP_KIND_ACT;
	return k;
}

/* The library takes no empty tensor; a 0-byte one gets a slab slot. */
static size_t nonzero(uint64_t size)
{
	return size ? (size_t)size : 1;
}

/*
 * A tensor from outside: uncomputable, and written once (the upload), so
 * that it holds memory from its creation as it did in the program.
 */
static int create_storage(struct replay *rp, uint32_t s)
{
	const struct tp_trace_storage *ts = &rp->t->storages[s];
	unsigned flags = TP_UNCOMPUTABLE |
			 kind_flags(rp->t->tensors[ts->base].flags);
	struct tp_tensor *x;
	int ret;

	x = tp_tensor_create(rp->ctx, nonzero(ts->size), flags);
	if (!x)
		return fail(rp, -errno, "tp_tensor_create(%" PRIu64 " bytes)",
			    ts->size);
	if (!tp_tensor_acquire(rp->ctx, x, TP_WRITE)) {
		ret = -errno;
		tp_tensor_free(rp->ctx, x);
		return fail(rp, ret, "writing tensor %u (%" PRIu64 " bytes)",
			    ts->base, ts->size);
	}
	tp_tensor_release(rp->ctx, x);
	rp->st[s].t = x;
	rp->st[s].refs = 1;
	rp->st[s].in_region = rp->in_region;
	return 0;
}

static int storage_put(struct replay *rp, uint32_t s)
{
	struct rp_storage *st = &rp->st[s];
	int ret;

	if (!st->refs || --st->refs)
		return 0;
	ret = tp_tensor_free(rp->ctx, st->t);
	st->t = NULL;
	return ret ? fail(rp, ret, "tp_tensor_free(storage %u)", s) : 0;
}

static int ev_tensor(struct replay *rp, uint32_t id)
{
	const struct tp_trace_tensor *tt = &rp->t->tensors[id];

	if (rp->t->storages[tt->storage].base == id)
		return create_storage(rp, tt->storage);
	rp->st[tt->storage].refs++;	/* a view */
	return 0;
}

/* Unless asynchronous: the host waits for the op (see replay.h). */
static int op_done(struct replay *rp)
{
	int ret;

	if (rp->o->async)
		return 0;
	ret = tp_vmm_stream_sync(rp->ctx->vmm, TP_STREAM_COMPUTE);
	return ret ? fail(rp, ret, "waiting for the compute stream") : 0;
}

/*
 * An op that makes no memory (views only): it still runs on its inputs,
 * so they are acquired, brought back if they left, as every op's are
 * (DTR's simulator materialises an alias's argument before defining
 * it), and its cost is charged on the compute stream.
 */
static int charge_only(struct replay *rp, const struct tp_trace_op *op,
		       uint64_t cost)
{
	unsigned j, held;
	int ret = 0;

	for (held = 0; held < op->n_args; held++)
		if (!tp_tensor_acquire(rp->ctx, rp->in[held], TP_READ)) {
			ret = fail(rp, -errno, "op %s: acquiring input %u",
				   rp->t->names + op->name, held);
			break;
		}
	if (!ret) {
		ret = tp_vmm_launch(rp->ctx->vmm, TP_STREAM_COMPUTE, cost,
				    NULL, NULL);
		if (ret)
			fail(rp, ret, "charging a view op");
	}
	for (j = 0; j < held; j++)
		tp_tensor_release(rp->ctx, rp->in[j]);
	return ret ? ret : op_done(rp);
}

/*
 * The trace's split marks in tp_op_run's terms: its outputs are the
 * trace op's fresh ones (a cut output is always fresh).
 */
static void split_marks(const struct replay *rp, const struct tp_trace_op *op,
			struct rp_params *p)
{
	const struct tp_trace_out *outs = &rp->t->outs[op->first_out];
	unsigned j, k = 0;

	p->rows = op->split_rows;
	p->in = op->split_in;
	p->passes = op->split_passes;
	p->granule = op->split_granule;
	for (j = 0; j < op->n_outs; j++) {
		if (outs[j].kind != TP_TRACE_OUT_FRESH)
			continue;
		if (j < 64 && (op->split_out >> j & 1) && k < 64)
			p->out |= UINT64_C(1) << k;
		k++;
	}
}

/*
 * Run one tp_op_run: @n_fresh fresh outputs in rp->out_bytes, plus, when
 * @ip_arg is not -1, the in-place output over argument @ip_arg placed
 * last. Fills rp->out.
 */
static int run_op(struct replay *rp, const struct tp_trace_op *op,
		  unsigned n_fresh, int ip_arg, uint64_t cost)
{
	const struct tp_op_type *type = &replay_op;
	struct rp_params p = { .cost_ns = cost };
	unsigned n_out = n_fresh;
	struct tp_tensor *x = NULL;
	int ret;

	if (op->split_rows && ip_arg < 0) {
		split_marks(rp, op, &p);
		if (op->split_local)
			type = &replay_local_op;
	}
	if (ip_arg >= 0) {
		x = rp->in[ip_arg];
		type = inplace_type(rp, (int)n_fresh, ip_arg);
		if (!type)
			return fail(rp, -ENOMEM, "in-place op type");
		rp->out_bytes[n_out++] = tp_tensor_size(x);
	}
	ret = tp_op_run(rp->ctx, type, &p, sizeof(p), rp->in,
			op->n_args, rp->out, rp->out_bytes, n_out);
	if (ret)
		return fail(rp, ret, "op %s",
			    rp->t->names + op->name);
	ret = op_done(rp);
	if (ret)
		return ret;
	rp->r->op_runs += rp->measuring;
	/*
	 * A computable input updated in place stays behind as the old
	 * version, regenerable by lineage; the program no longer holds it.
	 */
	if (x && rp->out[n_fresh] != x) {
		ret = tp_tensor_free(rp->ctx, x);
		if (ret)
			return fail(rp, ret, "freeing an overwritten version");
	}
	return 0;
}

/* Give the @n fresh outputs just made (rp->out) to their storages. */
static void assign_fresh(struct replay *rp, const struct tp_trace_op *op)
{
	const struct tp_trace *t = rp->t;
	const struct tp_trace_out *outs = &t->outs[op->first_out];
	unsigned j, k = 0;

	for (j = 0; j < op->n_outs; j++)
		if (outs[j].kind == TP_TRACE_OUT_FRESH)
			rp->st[t->tensors[outs[j].tensor].storage].t =
				rp->out[k++];
}

/*
 * tp_op_run takes one in-place output: the first carries the fresh
 * outputs and the cost, each further one is an op of its own, free,
 * reading the same inputs (their new versions where already written).
 */
static int run_inplace(struct replay *rp, const struct tp_trace_op *op,
		       unsigned n_fresh)
{
	const struct tp_trace *t = rp->t;
	const struct tp_trace_out *outs = &t->outs[op->first_out];
	uint64_t cost = op->cost_ns;
	unsigned j, k;
	int ret;

	for (j = 0; j < op->n_outs; j++) {
		struct tp_tensor *old, *new;

		if (outs[j].kind != TP_TRACE_OUT_INPLACE)
			continue;
		old = rp->in[outs[j].alias];
		ret = run_op(rp, op, n_fresh, outs[j].alias, cost);
		if (ret)
			return ret;
		if (n_fresh)
			assign_fresh(rp, op);
		new = rp->out[n_fresh];
		rp->st[t->tensors[outs[j].tensor].storage].t = new;
		for (k = 0; k < op->n_args; k++)
			if (rp->in[k] == old)
				rp->in[k] = new;
		n_fresh = 0;
		cost = 0;
	}
	return 0;
}

static int ev_op(struct replay *rp, uint32_t id)
{
	const struct tp_trace *t = rp->t;
	const struct tp_trace_op *op = &t->ops[id];
	const struct tp_trace_out *outs = &t->outs[op->first_out];
	unsigned j, n_fresh = 0, n_ip = 0;
	int ret;

	for (j = 0; j < op->n_args; j++) {
		uint32_t a = t->args[op->first_arg + j];

		rp->in[j] = rp->st[t->tensors[a].storage].t;
		if (!rp->in[j])
			return fail(rp, -EINVAL, "op %s: input %u has no storage",
				    t->names + op->name, j);
	}
	for (j = 0; j < op->n_outs; j++) {
		if (outs[j].kind == TP_TRACE_OUT_FRESH)
			rp->out_bytes[n_fresh++] =
				nonzero(t->tensors[outs[j].tensor].size);
		else if (outs[j].kind == TP_TRACE_OUT_INPLACE)
			n_ip++;
	}
	if (n_ip) {
		ret = run_inplace(rp, op, n_fresh);
	} else if (n_fresh) {
		ret = run_op(rp, op, n_fresh, -1, op->cost_ns);
		if (!ret)
			assign_fresh(rp, op);
	} else {
		ret = charge_only(rp, op, op->cost_ns);
	}
	if (ret)
		return ret;
	for (j = 0; j < op->n_outs; j++) {
		uint32_t s = t->tensors[outs[j].tensor].storage;
		struct rp_storage *st = &rp->st[s];

		if (outs[j].kind == TP_TRACE_OUT_FRESH) {
			st->refs = 1;
			st->in_region = rp->in_region;
		} else if (outs[j].kind == TP_TRACE_OUT_VIEW) {
			unsigned k;

			st->refs++;
			/* Its cost is the storage's too, once per op. */
			for (k = 0; k < j; k++)
				if (outs[k].kind == TP_TRACE_OUT_VIEW &&
				    t->tensors[outs[k].tensor].storage == s)
					break;
			if (k == j && st->t)
				tp_lineage_add_view_cost(rp->ctx->lineage,
							 st->t, op->cost_ns);
		}
		/* INPLACE: one version ends where the next begins. */
	}
	if (rp->measuring) {
		rp->r->ops++;
		rp->r->compute_ns += op->cost_ns;
	}
	return 0;
}

static int iteration_mark(struct replay *rp)
{
	int ret = 0;

	if (rp->in_iteration)
		ret = tp_iteration_end(rp->ctx);
	if (!ret)
		ret = tp_iteration_begin(rp->ctx);
	rp->in_iteration = !ret;
	return ret ? fail(rp, ret, "iteration boundary") : 0;
}

/* The clock and counters the region's figures are differences of. */
struct rp_snap {
	struct tp_stats s;
	uint64_t now;
	struct timespec wall;
};

static double seconds_between(const struct timespec *a,
			      const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static int snap(struct replay *rp, struct rp_snap *sn)
{
	int ret = tp_sync(rp->ctx);

	if (!ret)
		ret = tp_stats_get(rp->ctx, &sn->s);
	if (ret)
		return fail(rp, ret, "reading counters");
	sn->now = tp_vmm_now_ns(rp->ctx->vmm);
	clock_gettime(CLOCK_MONOTONIC, &sn->wall);
	return 0;
}

static void region_figures(struct replay *rp, const struct rp_snap *a,
			   const struct rp_snap *b)
{
	struct tp_replay_result *r = rp->r;

#define D(f) (b->s.f - a->s.f)
	r->time_ns = b->now - a->now;
	r->host_peak = b->s.host_peak;
	r->host_held = b->s.host_held;
	r->evictions = D(evictions);
	r->partial_evictions = D(partial_evictions);
	r->split_runs = D(split_runs);
	r->split_parts = D(split_parts);
	r->offloads = D(offloads);
	r->reloads = D(reloads);
	r->recomputes = D(recomputes);
	r->recompute_ns = D(recompute_ns);
	r->prefetch_hits = D(prefetch_hits);
	r->prefetch_issued = D(prefetch_issued);
	r->prefetch_late = D(prefetch_late);
	r->stall_ns = D(stall_ns);
	r->copy_ns = D(copy_d2h_ns) + D(copy_h2d_ns);
	r->policy_decisions = D(policy_decisions);
	r->policy_ns = D(policy_ns);
	r->driver_calls = D(driver_calls);
	r->driver_ns = D(driver_ns);
	r->writebacks = D(writebacks);
	r->cache_offloads = D(cache_offloads);
	r->plans = D(plans);
	r->plan_hits = D(plan_hits);
	r->plan_fallbacks = D(plan_fallbacks);
	r->plan_breaks = D(plan_breaks);
#undef D
	r->wall_s = seconds_between(&a->wall, &b->wall);
}

/*
 * DTR's rule: stop once recomputing costs more than the limit allows.
 * The count is read as it stands: tp_stats_get() would first take in
 * the copies completed, and a replay asked to watch for thrashing would
 * then run differently from one that is not (resnet50 at 8%: 1158% extra
 * time against 233%).
 */
enum thrash {
	THRASH_NO,
	THRASH_RECOMPUTE,	/* DTR's rule */
	THRASH_TIME,		/* the passes' time in all (thrash_base_ns) */
	THRASH_WALL,		/* their wall time (wall_base_s) */
};

static double wall_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return seconds_between(a, &b);
}

static enum thrash thrashing(struct replay *rp, unsigned passes)
{
	double limit = rp->o->thrash_limit;
	double compute = (double)rp->region_compute * passes;

	/* The whole run, warm-up passes included, against as many passes
	 * unconstrained. */
	if (rp->o->wall_limit > 0 && rp->o->wall_base_s > 0 &&
	    wall_since(&rp->wall_at_start) >
	    rp->o->wall_limit * rp->o->wall_base_s *
	    (rp->warm + passes))
		return THRASH_WALL;
	if (limit <= 0 || !rp->measuring)
		return THRASH_NO;
	if ((double)(tp_pager_recompute_ns(rp->ctx->pager) -
		     rp->recompute_at_begin) > (limit - 1) * compute)
		return THRASH_RECOMPUTE;
	if (rp->o->thrash_base_ns &&
	    (double)(tp_vmm_now_ns(rp->ctx->vmm) - rp->now_at_begin) >
	    limit * (double)rp->o->thrash_base_ns * passes)
		return THRASH_TIME;
	return THRASH_NO;
}

/*
 * The thrash rule inside a regeneration too (lineage.recompute_limit):
 * what recompute the passes measured have left, for the pass beginning.
 * The library counts from the iteration's start, which is no earlier
 * than the pass's: it never stops a run that the rule lets go on.
 */
static int recompute_limit(struct replay *rp, unsigned passes)
{
	double limit = rp->o->thrash_limit, left;
	uint64_t spent;
	char v[32];
	int ret;

	if (limit <= 0)
		return 0;
	spent = tp_pager_recompute_ns(rp->ctx->pager) - rp->recompute_at_begin;
	left = (limit - 1) * (double)rp->region_compute * passes -
	       (double)spent;
	snprintf(v, sizeof(v), "%.0f", left > 1 ? left : 1);
	ret = tp_ctl_set(rp->ctx, "lineage.recompute_limit", v);
	return ret ? fail(rp, ret, "lineage.recompute_limit = %s", v) : 0;
}

/*
 * Before a repeat of the region: the region's own storages go (a new
 * iteration makes new ones), and those from before it that it freed come
 * back fresh, as the next batch does.
 */
static int reset_region(struct replay *rp)
{
	size_t s;
	int ret;

	for (s = 0; s < rp->t->n_storages; s++) {
		struct rp_storage *st = &rp->st[s];

		if (st->in_region) {
			if (st->t) {
				ret = tp_tensor_free(rp->ctx, st->t);
				if (ret)
					return fail(rp, ret, "freeing storage %zu", s);
			}
			st->t = NULL;
			st->refs = 0;
			st->in_region = false;
			continue;
		}
		if (!st->refs_at_begin)
			continue;
		if (!st->t) {
			bool was = rp->in_region;

			rp->in_region = false;
			ret = create_storage(rp, (uint32_t)s);
			rp->in_region = was;
			if (ret)
				return ret;
		}
		st->refs = st->refs_at_begin;
	}
	return 0;
}

static int apply(struct replay *rp, const struct tp_trace_event *e)
{
	switch (e->kind) {
	case TP_TRACE_EV_TENSOR:
		return ev_tensor(rp, e->arg);
	case TP_TRACE_EV_OP:
		return ev_op(rp, e->arg);
	case TP_TRACE_EV_FREE:
		return storage_put(rp, rp->t->tensors[e->arg].storage);
	case TP_TRACE_EV_ITER:
		return iteration_mark(rp);
	default:
		return 0;
	}
}

static int build_opts(const struct tp_replay_opts *o, uint64_t chunk,
		      uint64_t unlimited, char *buf, size_t len)
{
	size_t n;

	/*
	 * Freed tensors' ranges stay mapped for the next of their size, as
	 * in training (pager.range_cache_freed): free memory the pool takes
	 * back first, so a budget fits what it fitted without them, and
	 * not counted in held_peak, DTR's byte count.
	 */
	n = (size_t)snprintf(buf, len, "vmm.backend=sim,vmm.chunk_size=%" PRIu64
			     "%s", chunk,
			     o->async ? "" : ",vmm.sim.sync=1");
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ",pager.budget=%" PRIu64
				      ",vmm.device_memory=%" PRIu64,
				      o->budget_bytes ? o->budget_bytes : unlimited,
				      o->budget_bytes ? o->budget_bytes : unlimited);
	if (o->filter && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",policy.filter=%s",
				      o->filter);
	if (o->director && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",policy.director=%s",
				      o->director);
	if (o->prefetch >= 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",policy.prefetch=%d",
				      !!o->prefetch);
	if (o->bandwidth > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",vmm.sim.bandwidth=%.17g",
				      o->bandwidth);
	if (o->remap_ns >= 0 && n < len) {
		const double sum = SIM_MAP_NS + SIM_ACCESS_NS + SIM_UNMAP_NS;
		int64_t map = (int64_t)(o->remap_ns * (SIM_MAP_NS / sum) + 0.5);
		int64_t acc = (int64_t)(o->remap_ns * (SIM_ACCESS_NS / sum) + 0.5);
		int64_t unmap = o->remap_ns - map - acc;

		if (unmap < 0)
			unmap = 0;
		n += (size_t)snprintf(buf + n, len - n,
				      ",vmm.sim.map_ns=%" PRId64
				      ",vmm.sim.set_access_ns=%" PRId64
				      ",vmm.sim.unmap_ns=%" PRId64
				      ",policy.remap_ns=%" PRId64,
				      map, acc, unmap, o->remap_ns);
	}
	if (o->extra && o->extra[0] && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",%s", o->extra);
	return n < len ? 0 : -E2BIG;
}

/* Compute time of one pass over the measured region. */
static uint64_t region_compute(const struct tp_trace *t, size_t begin,
			       size_t end)
{
	uint64_t ns = 0;

	for (size_t i = begin; i < end; i++)
		if (t->events[i].kind == TP_TRACE_EV_OP)
			ns += t->ops[t->events[i].arg].cost_ns;
	return ns;
}

/* The policy that runs: the options', else the configuration's. */
static void note_policy(struct tp_ctx *ctx, struct tp_replay_result *r)
{
	char f[32], d[32];

	if (!tp_ctl_get(ctx, "policy.filter", f, sizeof(f)) &&
	    !tp_ctl_get(ctx, "policy.director", d, sizeof(d)))
		snprintf(r->policy, sizeof(r->policy), "%s/%s", f, d);
}

/* Whether policy.tune still times pairs: the warm-up goes on. */
static bool tune_pending(struct replay *rp)
{
	struct tp_stats st;

	return !tp_stats_get(rp->ctx, &st) && st.tune_pending;
}

int tp_replay_run(const struct tp_trace *t, const struct tp_replay_opts *o,
		  struct tp_replay_result *r)
{
	struct replay rp = { .t = t, .o = o, .r = r };
	uint64_t chunk = tp_replay_chunk(t, o);
	unsigned passes = o->iterations ? o->iterations : 1;
	bool marked = false;
	struct rp_snap a, b;
	uint64_t unlimited = 0;
	size_t i, begin = 0, end = t->n_events;
	char opts[1024];
	int ret;

	memset(r, 0, sizeof(*r));
	if (o->remap_ns > 1000000000 || o->thrash_limit < 0 ||
	    o->wall_limit < 0 || o->wall_base_s < 0)
		return fail(&rp, -EINVAL, "replay options out of range");
	/* The region: after MEASURE_BEGIN up to MEASURE_END. */
	if (t->measured) {
		for (i = 0; i < t->n_events; i++)
			if (t->events[i].kind == TP_TRACE_EV_MEASURE_BEGIN)
				break;
		begin = i + 1;
		for (i = begin; i < t->n_events; i++)
			if (t->events[i].kind == TP_TRACE_EV_MEASURE_END)
				break;
		end = i;
	}
	rp.region_compute = region_compute(t, begin, end);
	/* A region without iteration marks of its own is one iteration:
	 * each pass is marked as one, so that the prefetcher learns it. */
	for (i = begin; i < end && !marked; i++)
		marked = t->events[i].kind == TP_TRACE_EV_ITER;
	if (o->warmup > 1000 || o->iterations > 1000000)
		return fail(&rp, -EINVAL, "replay options out of range");

	if (!o->budget_bytes) {
		struct tp_trace_summary sum;

		ret = tp_trace_peak(t, &sum);
		if (ret)
			return fail(&rp, ret, "trace accounting");
		/*
		 * "No limit" on a pool sized by its budget: twice what the
		 * trace ever holds live, which chunk rounding, slabs and the
		 * range cache cannot outgrow.
		 */
		unlimited = 2 * sum.peak_bytes + 256 * chunk;
	}
	rp.st = calloc(t->n_storages ? t->n_storages : 1, sizeof(*rp.st));
	if (!rp.st)
		return fail(&rp, -ENOMEM, "replay state");
	if (build_opts(o, chunk, unlimited, opts, sizeof(opts))) {
		ret = fail(&rp, -EINVAL, "replay options too long");
		goto out_free;
	}
	rp.ctx = tp_ctx_create(opts);
	if (!rp.ctx) {
		ret = fail(&rp, -errno, "creating the sim context");
		if (ret == -ENOMEM)	/* not the budget's doing */
			r->status = TP_REPLAY_ERROR;
		goto out_free;
	}
	r->limited = o->budget_bytes != 0;
	note_policy(rp.ctx, r);
	for (i = 0; i < begin; i++) {
		ret = apply(&rp, &t->events[i]);
		if (ret)
			goto out_verdict;
	}
	for (i = 0; i < t->n_storages; i++)
		rp.st[i].refs_at_begin = rp.st[i].refs;
	rp.in_region = true;
	clock_gettime(CLOCK_MONOTONIC, &rp.wall_at_start);
	rp.warm = o->warmup;
	for (unsigned p = 0; p < rp.warm + passes; p++) {
		ret = p ? reset_region(&rp) : 0;
		/* one open just before the region is this pass's */
		if (!ret && !marked && (p || !rp.in_iteration))
			ret = iteration_mark(&rp);
		if (ret)
			goto out_verdict;
		if (p == rp.warm && o->warmup_tuned &&
		    p < o->warmup + TP_REPLAY_TUNE_PASSES && tune_pending(&rp))
			rp.warm++;
		if (p == rp.warm) {
			ret = snap(&rp, &a);
			if (ret)
				goto out_verdict;
			rp.recompute_at_begin = a.s.recompute_ns;
			rp.now_at_begin = a.now;
			rp.measuring = true;
		}
		if (rp.measuring) {
			ret = recompute_limit(&rp, passes);
			if (ret)
				goto out_verdict;
		}
		for (i = begin; i < end; i++) {
			enum thrash why = THRASH_NO;

			ret = apply(&rp, &t->events[i]);
			if (ret || t->events[i].kind == TP_TRACE_EV_OP)
				why = thrashing(&rp, passes);
			/* stopped inside by lineage.recompute_limit */
			if (ret && !(ret == -TP_EWORK && why))
				goto out_verdict;
			/* Stopped in a warm-up pass: nothing measured. */
			if (why && !rp.measuring) {
				ret = snap(&rp, &a);
				if (ret)
					goto out_verdict;
			}
			if (why) {
				r->status = TP_REPLAY_THRASH;
				r->err = 0;
				r->by_wall = why == THRASH_WALL;
				if (why == THRASH_WALL)
					snprintf(r->error, sizeof(r->error),
						 "the passes took more than %.2fx their unconstrained wall time (%.3f s a pass)",
						 o->wall_limit, o->wall_base_s);
				else
					snprintf(r->error, sizeof(r->error),
						 why == THRASH_TIME ?
						 "the passes took more than %.2fx their unconstrained time" :
						 "recompute passed %.2fx the compute time",
						 o->thrash_limit);
				goto out_figures;
			}
		}
	}
	rp.in_region = false;
	rp.measuring = false;
	if (rp.in_iteration) {
		ret = tp_iteration_end(rp.ctx);
		if (ret) {
			fail(&rp, ret, "iteration end");
			goto out_verdict;
		}
	}
out_figures:
	ret = snap(&rp, &b);
	if (ret)
		goto out_verdict;
	/* the pair in force at the end: policy.tune's, if it kept one */
	(void)tp_ctx_pair_in_force(&b.s, r->in_force, sizeof(r->in_force));
	r->warmup = rp.warm;
	region_figures(&rp, &a, &b);
	r->fragmentation_ppm = b.s.fragmentation_ppm;
	r->phys_peak = b.s.phys_peak;
	r->held_peak = b.s.held_peak;
	r->budget_bytes = b.s.budget_bytes;
	r->chunk_size = b.s.chunk_size;
	ret = 0;
	goto out_ctx;

out_verdict:
	/* Not fitting is a result, not an error. */
	if (r->status == TP_REPLAY_OOM) {
		struct tp_stats s;

		if (!tp_stats_get(rp.ctx, &s)) {
			r->fragmentation_ppm = s.fragmentation_ppm;
			r->phys_peak = s.phys_peak;
			r->held_peak = s.held_peak;
			r->budget_bytes = s.budget_bytes;
			r->chunk_size = s.chunk_size;
		}
		ret = 0;
	}
out_ctx:
	tp_ctx_destroy(rp.ctx);
out_free:
	while (rp.inplace) {
		struct rp_inplace_type *it = rp.inplace;

		rp.inplace = it->next;
		free(it);
	}
	free(rp.st);
	return ret;
}

void tp_replay_defaults(struct tp_replay_opts *o, bool dtr, bool profile)
{
	o->remap_ns = dtr && !profile ? 0 : -1;
	o->thrash_limit = dtr ? TP_REPLAY_DTR_THRASH : TP_REPLAY_TRACE_THRASH;
	o->async = profile;
}

double tp_replay_overhead(const struct tp_replay_result *r)
{
	if (!r->compute_ns)
		return 1.0;
	return (double)(r->compute_ns + r->recompute_ns) /
	       (double)r->compute_ns;
}
