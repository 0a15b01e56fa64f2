/* SPDX-License-Identifier: MIT */
/*
 * The planned mode (planned.h): the record made a model (plan.h), the
 * plan carried out, and the checks that it still holds.
 *
 * One file, past the usual length: the model, the plan, the ops and the
 * victims are the steps of one state machine over struct tp_planned,
 * private to this file.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/log.h"
#include "pager/pager.h"
#include "policy/plan.h"
#include "policy/planned.h"
#include "policy/policy_priv.h"
#include "vmm/vmm.h"

/*
 * What one more part costs an op beyond its share of the work (TSPLIT
 * eq. 6's ΔT_split): a launch and a smaller, less efficient kernel. Not
 * measured: the library times whole runs only.
 */
#define TP_PLAN_PART_NS 5000.0

/*
 * Where the plan has a tensor out: the record's name of it, out while ops
 * [from, to) run. @how: TP_PLAN_SWAP offloads, RECOMPUTE and SPLIT evict,
 * RESIDE marks a tensor the record says is done with (dropped first).
 */
struct pwin {
	int32_t name;
	uint32_t from, to;
	enum tp_plan_how how;
};

struct tp_planned {
	/* The plan for the iteration under way, made at the last end. */
	bool have;
	bool holds;			/* so far in this iteration */
	bool in_iter;
	uint64_t room;			/* bytes it was planned for */
	uint32_t n_ops;
	struct tp_record_op *ops;	/* the record's, to check against */
	int32_t *io;
	unsigned *parts;		/* per op: parts to run it in */
	struct pwin *w;			/* by from */
	size_t n_w;
	/* The windows open at the current op (indices into w). */
	size_t w_next;
	uint32_t *open;
	size_t n_open, cap_open;
	uint64_t plans, hits, fallbacks, breaks;
};

struct tp_planned *tp_planned_create(void)
{
	return calloc(1, sizeof(struct tp_planned));
}

static void drop_plan(struct tp_planned *pl)
{
	free(pl->ops);
	free(pl->io);
	free(pl->parts);
	free(pl->w);
	pl->ops = NULL;
	pl->io = NULL;
	pl->parts = NULL;
	pl->w = NULL;
	pl->n_w = 0;
	pl->n_ops = 0;
	pl->have = false;
	pl->holds = false;
}

void tp_planned_destroy(struct tp_planned *pl)
{
	if (!pl)
		return;
	drop_plan(pl);
	free(pl->open);
	free(pl);
}

bool tp_planned_on(const struct tp_policy *pol)
{
	return pol->plan && pol->conf->policy_plan == TP_PLAN_KIND_TSPLIT;
}

static uint64_t chunk_bytes(const struct tp_policy *pol)
{
	if (pol->vmm && pol->vmm->granularity)
		return pol->vmm->granularity;
	return pol->conf->vmm_chunk_size;
}

/* What the plan may fill: the pool less what someone pins now. */
static uint64_t room_bytes(struct tp_policy *pol)
{
	if (!pol->pager)
		return 0;
	return (uint64_t)tp_pager_room_pages(pol->pager) *
	       chunk_bytes(pol);
}

/* The plan stops holding for the rest of the iteration. */
static void plan_breaks(struct tp_planned *pl, const char *why)
{
	if (!pl->holds)
		return;
	pl->holds = false;
	pl->breaks++;
	tp_log(TP_LOG_DEBUG, "policy.plan: the plan no longer holds: %s", why);
}

/* --- the model from the record -------------------------------------- */

struct model_buf {
	struct tp_plan_model m;
	struct tp_plan_op *ops;
	struct tp_plan_tensor *t;
	uint32_t *io;
	uint32_t *acc;		/* every tensor's accesses, by offset */
	uint32_t *acc_off;	/* n_t + 1 */
	int32_t *name2t;	/* record name -> tensor, -1 */
	int32_t *t2name;
	bool *small;		/* packed in a slab: never leaves */
};

static void model_free(struct model_buf *b)
{
	free(b->ops);
	free(b->t);
	free(b->io);
	free(b->acc);
	free(b->acc_off);
	free(b->name2t);
	free(b->t2name);
	free(b->small);
	memset(b, 0, sizeof(*b));
}

/*
 * The op an acquisition outside any op belongs to: a tensor's first, if
 * it was made in the iteration (the program writes its input before the
 * op that reads it), the next op; any other, the op before (the program
 * reads a result).
 */
static uint32_t step_op(const struct tp_record_step *s, bool first,
			uint32_t n_ops)
{
	uint32_t op = s->op;

	if (!s->in_op && !(first && s->born) && op)
		op--;
	return op < n_ops ? op : n_ops - 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Tensors: one per name of the program's acquisitions. */
static int model_tensors(struct tp_policy *pol, const struct tp_record *rec,
			 struct model_buf *b, uint32_t *n_t)
{
	size_t ns = rec->n_steps;
	uint64_t chunk = chunk_bytes(pol);
	double slab = pol->conf->pager_slab_fraction * (double)chunk;
	uint32_t n = 0;

	b->name2t = malloc((ns + 1) * sizeof(*b->name2t));
	b->t2name = malloc((ns + 1) * sizeof(*b->t2name));
	b->t = calloc(ns + 1, sizeof(*b->t));
	b->small = calloc(ns + 1, sizeof(*b->small));
	b->acc_off = calloc(ns + 2, sizeof(*b->acc_off));
	if (!b->name2t || !b->t2name || !b->t || !b->small || !b->acc_off)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++)
		b->name2t[i] = -1;
	for (size_t i = 0; i < ns; i++) {
		const struct tp_record_step *s = &rec->steps[i];
		struct tp_plan_tensor *t;

		if (s->replay || s->name < 0 || (size_t)s->name >= ns)
			continue;
		if (b->name2t[s->name] < 0) {
			b->name2t[s->name] = (int32_t)n;
			b->t2name[n] = s->name;
			t = &b->t[n];
			b->small[n] = (double)s->bytes < slab;
			t->bytes = b->small[n] || !s->pages ? (double)s->bytes :
				   (double)s->pages * (double)chunk;
			t->producer = -1;
			t->born = s->born;
			t->swappable = !b->small[n] &&
				       !(s->flags & (TP_OFFLOAD_PINNED |
						     TP_NO_PAGING |
						     TP_SCRATCH));
			t->remap_ns = tp_policy_remap_ns(pol, s->pages);
			/* recomputable once its producer is known */
			t->recomputable = !b->small[n] && s->born &&
					  !(s->flags & (TP_EVICT_PINNED |
							TP_NO_PAGING |
							TP_SCRATCH));
			n++;
		}
		b->acc_off[b->name2t[s->name] + 1]++;
	}
	*n_t = n;
	return 0;
}

/* Accesses, ascending and distinct, from the acquisitions. */
static int model_accesses(const struct tp_record *rec, struct model_buf *b,
			  uint32_t n_t, uint32_t n_ops)
{
	uint32_t *fill;
	bool *seen;

	for (uint32_t j = 0; j < n_t; j++)
		b->acc_off[j + 1] += b->acc_off[j];
	b->acc = malloc((b->acc_off[n_t] + 1) * sizeof(*b->acc));
	fill = calloc(n_t + 1, sizeof(*fill));
	seen = calloc(n_t + 1, sizeof(*seen));
	if (!b->acc || !fill || !seen) {
		free(fill);
		free(seen);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rec->n_steps; i++) {
		const struct tp_record_step *s = &rec->steps[i];
		int32_t j;

		if (s->replay || s->name < 0 || (size_t)s->name >= rec->n_steps)
			continue;
		j = b->name2t[s->name];
		b->acc[b->acc_off[j] + fill[j]++] = step_op(s, !seen[j],
							    n_ops);
		seen[j] = true;
	}
	for (uint32_t j = 0; j < n_t; j++) {
		uint32_t *a = b->acc + b->acc_off[j], k = 0;

		qsort(a, fill[j], sizeof(*a), cmp_u32);
		for (uint32_t q = 0; q < fill[j]; q++)
			if (!k || a[q] != a[k - 1])
				a[k++] = a[q];
		b->t[j].acc = a;
		b->t[j].n_acc = k;
	}
	free(fill);
	free(seen);
	return 0;
}

/* The ops: costs, tensors by index, cuts; each output's producer. */
static int model_ops(struct tp_policy *pol, const struct tp_record *rec,
		     struct model_buf *b)
{
	unsigned max_parts = (unsigned)pol->conf->policy_split_max_parts;
	uint32_t nio = 0;

	b->ops = calloc(rec->n_ops + 1, sizeof(*b->ops));
	b->io = calloc(rec->n_io + 1, sizeof(*b->io));
	if (!b->ops || !b->io)
		return -ENOMEM;
	for (size_t k = 0; k < rec->n_ops; k++) {
		const struct tp_record_op *r = &rec->ops[k];
		struct tp_plan_op *o = &b->ops[k];
		bool whole = false;

		o->ns = (double)r->ns;
		o->in = nio;
		for (uint32_t q = 0; q < r->n_in + r->n_out; q++) {
			int32_t name = rec->io[r->io + q];
			int32_t j = name >= 0 && (size_t)name < rec->n_steps ?
				    b->name2t[name] : -1;

			/* a tensor the record could not name: no cut */
			if (j < 0) {
				whole = true;
				continue;
			}
			b->io[nio++] = (uint32_t)j;
			if (q < r->n_in) {
				o->n_in++;
				continue;
			}
			if (!o->n_out++)
				o->out = nio - 1;
			if (b->t[j].producer < 0) {
				b->t[j].producer = (int32_t)k;
				b->t[j].recomputable &=
					q - r->n_in < 64 &&
					((r->out_regen >> (q - r->n_in)) & 1);
			}
		}
		if (!o->n_out)
			o->out = nio;
		if (!whole && r->cut.rows >= 2) {
			o->max_parts = r->cut.rows < max_parts ?
				       (unsigned)r->cut.rows : max_parts;
			o->cut_in = r->cut.in;
			o->cut_out = r->cut.out;
		}
	}
	return 0;
}

static int build_model(struct tp_policy *pol, const struct tp_record *rec,
		       uint64_t room, struct model_buf *b)
{
	uint32_t n_t = 0, n_ops = (uint32_t)rec->n_ops;
	int ret;

	memset(b, 0, sizeof(*b));
	ret = model_tensors(pol, rec, b, &n_t);
	if (!ret)
		ret = model_accesses(rec, b, n_t, n_ops);
	if (!ret)
		ret = model_ops(pol, rec, b);
	if (ret)
		return ret;
	for (uint32_t j = 0; j < n_t; j++)
		if (b->t[j].producer < 0)
			b->t[j].recomputable = false;
	b->m = (struct tp_plan_model){
		.ops = b->ops, .n_ops = n_ops, .t = b->t, .n_t = n_t,
		.io = b->io, .budget = (double)room,
		.bw = tp_bw_get(&pol->bw, pol->conf),
		.occupancy = tp_bw_occupancy(&pol->bw),
		.part_ns = TP_PLAN_PART_NS,
	};
	return 0;
}

/* --- the plan ------------------------------------------------------- */

static int add_window(struct pwin **w, size_t *n, size_t *cap, int32_t name,
		      uint32_t from, uint32_t to, enum tp_plan_how how)
{
	if (from >= to)
		return 0;
	if (*n == *cap) {
		struct pwin *x = tp_array_grow(*w, cap, *cap + 1, sizeof(*x),
					       64);

		if (!x)
			return -ENOMEM;
		*w = x;
	}
	(*w)[(*n)++] = (struct pwin){ name, from, to, how };
	return 0;
}

static int cmp_pwin(const void *a, const void *b)
{
	const struct pwin *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from;
}

/*
 * The plan's windows by record name: where the planner has a tensor
 * out (a window past the iteration's end wraps to its start), and, for
 * a tensor made in the iteration, from after its last access on.
 */
static int plan_windows(const struct model_buf *b,
			const struct tp_plan_result *r, struct pwin **out,
			size_t *n_out)
{
	uint32_t n = b->m.n_ops;
	struct pwin *w = NULL;
	size_t nw = 0, cap = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < r->n_w; i++) {
		const struct tp_plan_window *x = &r->w[i];
		int32_t name = b->t2name[x->tensor];

		if (b->small[x->tensor])
			continue;
		if (x->to <= n) {
			ret = add_window(&w, &nw, &cap, name, x->from, x->to,
					 x->how);
			continue;
		}
		ret = add_window(&w, &nw, &cap, name, x->from < n ? x->from : n,
				 n, x->how);
		if (!ret)
			ret = add_window(&w, &nw, &cap, name,
					 x->from > n ? x->from - n : 0,
					 x->to - n < n ? x->to - n : n,
					 x->how);
	}
	for (uint32_t j = 0; !ret && j < b->m.n_t; j++) {
		const struct tp_plan_tensor *t = &b->t[j];

		if (t->born && t->n_acc && !b->small[j])
			ret = add_window(&w, &nw, &cap, b->t2name[j],
					 t->acc[t->n_acc - 1] + 1, n,
					 TP_PLAN_RESIDE);
	}
	if (ret) {
		free(w);
		return ret;
	}
	if (nw)
		qsort(w, nw, sizeof(*w), cmp_pwin);
	*out = w;
	*n_out = nw;
	return 0;
}

/* Plan the next iteration from the record of the one that ended. */
static int make_plan(struct tp_policy *pol, struct tp_planned *pl)
{
	struct tp_record rec;
	struct model_buf b;
	struct tp_plan_choice c = { 0 };
	struct tp_plan_result r = { 0 };
	uint64_t room = room_bytes(pol);
	int ret;

	drop_plan(pl);
	ret = tp_prefetch_record(pol->pf, &rec);
	if (ret)
		return ret;
	/* A first iteration tells no parameter from an activation. */
	if (!rec.followed || !rec.n_ops) {
		tp_record_free(&rec);
		return 0;
	}
	ret = build_model(pol, &rec, room, &b);
	if (!ret)
		ret = tp_plan_choice_alloc(&b.m, &c);
	if (!ret)
		ret = tp_plan_tsplit(&b.m, &c);
	if (!ret)
		ret = tp_plan_eval(&b.m, &c, true, &r);
	if (!ret)
		ret = plan_windows(&b, &r, &pl->w, &pl->n_w);
	if (!ret) {
		pl->parts = c.parts;
		c.parts = NULL;
		pl->ops = rec.ops;
		pl->io = rec.io;
		rec.ops = NULL;
		rec.io = NULL;
		pl->n_ops = b.m.n_ops;
		pl->room = room;
		pl->have = true;
		pl->plans++;
		tp_log(TP_LOG_DEBUG, "policy.plan: %u ops, %u tensors, %u bottlenecks; peak %.0f -> %.0f of %llu bytes (%s), %.3f ms more",
		       b.m.n_ops, b.m.n_t, r.bottlenecks, r.peak_reside,
		       r.peak, (unsigned long long)room,
		       r.fits ? "fits" : "does not fit", r.cost_ns / 1e6);
	}
	free(r.w);
	tp_plan_choice_free(&c);
	model_free(&b);
	tp_record_free(&rec);
	return ret;
}

void tp_planned_iteration_begin(struct tp_policy *pol)
{
	struct tp_planned *pl = pol->plan;

	if (!pl)
		return;
	pl->in_iter = true;
	pl->w_next = 0;
	pl->n_open = 0;
	pl->holds = false;
	if (!tp_planned_on(pol) || !pl->have)
		return;
	pl->holds = true;
	if (!tp_prefetch_predicting(pol->pf))
		plan_breaks(pl, "the iteration follows no record");
	else if (room_bytes(pol) != pl->room)
		plan_breaks(pl, "the room it was made for changed");
}

void tp_planned_iteration_end(struct tp_policy *pol)
{
	struct tp_planned *pl = pol->plan;
	int ret;

	if (!pl)
		return;
	pl->in_iter = false;
	pl->holds = false;
	if (!tp_planned_on(pol)) {
		drop_plan(pl);
		return;
	}
	ret = make_plan(pol, pl);
	if (ret)
		tp_log(TP_LOG_WARN, "policy.plan: no plan for the next iteration: %s",
		       tp_strerror(ret));
}

/* --- the ops -------------------------------------------------------- */

static bool same_cut(const struct tp_op_split *a, const struct tp_op_split *b)
{
	if (!a || a->rows < 2)
		return b->rows < 2;
	return a->rows == b->rows && a->in == b->in && a->out == b->out;
}

/* @t is the record's @name, or becomes it now (tp_prefetch_bind()). */
static bool named_as(struct tp_policy *pol, struct tp_tensor *t, int32_t name)
{
	return tp_prefetch_name(pol->pf, t) == name ||
	       tp_prefetch_bind(pol->pf, t, name);
}

bool tp_policy_wants_cuts(const struct tp_policy *pol)
{
	return tp_planned_on(pol);
}

unsigned tp_policy_op_begin(struct tp_policy *pol, struct tp_tensor *const *in,
			    unsigned n_in, const struct tp_op_split *cut)
{
	struct tp_planned *pl = pol->plan;
	const struct tp_record_op *r;
	uint32_t k;

	tp_prefetch_op_begin(pol->pf, cut);
	if (!pl || !tp_planned_on(pol) || !pl->holds || !pl->in_iter)
		return 0;
	k = tp_prefetch_op_index(pol->pf);
	if (k >= pl->n_ops) {
		plan_breaks(pl, "more ops than the record");
		return 0;
	}
	r = &pl->ops[k];
	if (r->n_in != n_in || !same_cut(cut, &r->cut)) {
		plan_breaks(pl, "another op than the record's");
		return 0;
	}
	/* An input the op acquires first is checked at its end. */
	for (unsigned q = 0; q < n_in; q++)
		if (tp_prefetch_seen(pol->pf, in[q]) &&
		    !named_as(pol, in[q], pl->io[r->io + q])) {
			plan_breaks(pl, "an op reads other tensors than the record's");
			return 0;
		}
	if (pl->parts[k] < 2)
		return 0;
	pl->hits++;
	return pl->parts[k];
}

void tp_policy_op_end(struct tp_policy *pol, struct tp_tensor *const *in,
		      unsigned n_in, struct tp_tensor *const *out,
		      unsigned n_out, uint64_t ns)
{
	struct tp_planned *pl = pol->plan;
	uint64_t regen = 0;

	for (unsigned k = 0; k < n_out && k < 64; k++)
		if (tp_policy_computable(pol, out[k]) &&
		    !(out[k]->flags & TP_SCRATCH))
			regen |= 1ull << k;
	if (pl && tp_planned_on(pol) && pl->holds && pl->in_iter) {
		uint32_t k = tp_prefetch_op_index(pol->pf);
		const struct tp_record_op *r = k < pl->n_ops ? &pl->ops[k] :
							       NULL;

		/* The op log, not the order of acquisitions, names them. */
		for (unsigned q = 0; r && q < n_in; q++)
			if (r->n_in != n_in ||
			    !named_as(pol, in[q], pl->io[r->io + q]))
				r = NULL;
		if (!r)
			plan_breaks(pl, "an op reads other tensors than the record's");
		for (unsigned q = 0; r && q < n_out; q++)
			if (r->n_out != n_out ||
			    !named_as(pol, out[q], pl->io[r->io + r->n_in + q]))
				r = NULL;
		if (!r)
			plan_breaks(pl, "an op writes other tensors than the record's");
	}
	/* -ENOMEM only loses the op from the record. */
	(void)tp_prefetch_op_end(pol->pf, in, n_in, out, n_out, ns, regen);
}

/* --- victims -------------------------------------------------------- */

/* Open the windows that start by op @k; forget those that ended. */
static int advance(struct tp_planned *pl, uint32_t k)
{
	size_t n = 0;

	for (size_t i = 0; i < pl->n_open; i++)
		if (pl->w[pl->open[i]].to > k)
			pl->open[n++] = pl->open[i];
	pl->n_open = n;
	for (; pl->w_next < pl->n_w && pl->w[pl->w_next].from <= k;
	     pl->w_next++) {
		if (pl->w[pl->w_next].to <= k)
			continue;
		if (pl->n_open == pl->cap_open) {
			uint32_t *o;

			o = tp_array_grow(pl->open, &pl->cap_open,
					  pl->cap_open + 1, sizeof(*o), 64);
			if (!o)
				return -ENOMEM;
			pl->open = o;
		}
		pl->open[pl->n_open++] = (uint32_t)pl->w_next;
	}
	return 0;
}

/* How the plan's window @w has its tensor @t leave. */
static enum tp_leave window_leave(struct tp_policy *pol, const struct pwin *w,
				  const struct tp_tensor *t)
{
	if (w->how == TP_PLAN_SWAP)
		return TP_LEAVE_OFFLOAD;
	if (w->how == TP_PLAN_RESIDE && !tp_policy_computable(pol, t))
		return TP_LEAVE_OFFLOAD;	/* done with, cannot be dropped */
	return TP_LEAVE_EVICT;
}

struct cand {
	struct tp_tensor *t;
	enum tp_leave how;
	bool done_with;
	uint32_t to;
	double m;
};

/* Done with first (free), then the one needed latest, then the larger. */
static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->done_with != y->done_with)
		return x->done_with ? -1 : 1;
	if (x->to != y->to)
		return x->to > y->to ? -1 : 1;
	return x->m > y->m ? -1 : x->m < y->m;
}

/* Whether @c may leave as @ask needs (the director's checks). */
static bool qualifies(struct tp_policy *pol, const struct tp_planned_ask *ask,
		      const struct cand *c)
{
	struct tp_director_in in;

	tp_policy_director_in(pol, c->t, ask->no_offload, &in);
	if (c->how == TP_LEAVE_EVICT &&
	    (!in.computable || (in.flags & TP_EVICT_PINNED)))
		return false;
	if (c->how == TP_LEAVE_OFFLOAD &&
	    (ask->no_offload || (c->t->flags & TP_OFFLOAD_PINNED)))
		return false;
	if (ask->ahead_of)
		return tp_policy_ahead_ok(pol, c->t, ask->ahead_of, c->how,
					  &in);
	if (!ask->ahead && ask->max_cost < INFINITY)
		return tp_policy_leave_cost(pol, c->how, &in) < ask->max_cost;
	return true;
}

int tp_planned_choose(struct tp_policy *pol, const struct tp_planned_ask *ask,
		      struct tp_tensor **victim, enum tp_leave *how)
{
	struct tp_planned *pl = pol->plan;
	bool release = ask->ahead && !ask->ahead_of;
	struct cand *c = NULL;
	size_t n = 0;
	int rc = -ENOENT;

	if (!tp_planned_on(pol))
		return -ENOENT;
	if (!pl->holds || !pl->in_iter ||
	    advance(pl, tp_prefetch_op_index(pol->pf)))
		goto fallback;
	c = malloc((pl->n_open + 1) * sizeof(*c));
	if (!c)
		goto fallback;
	for (size_t i = 0; i < pl->n_open; i++) {
		const struct pwin *w = &pl->w[pl->open[i]];
		struct tp_tensor *t = tp_prefetch_named(pol->pf, w->name);

		/* A release ahead of need moves only what the plan swaps. */
		if (!t || t->pins || !tp_pol_index_has(pol->idx, t) ||
		    (release && w->how != TP_PLAN_SWAP))
			continue;
		c[n++] = (struct cand){
			.t = t, .how = window_leave(pol, w, t),
			.done_with = w->how == TP_PLAN_RESIDE, .to = w->to,
			.m = tp_filter_mem(t),
		};
	}
	if (n > 1)
		qsort(c, n, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < n; i++) {
		if (!qualifies(pol, ask, &c[i]))
			continue;
		*victim = c[i].t;
		*how = c[i].how;
		pl->hits++;
		free(c);
		return 0;
	}
	free(c);
	if (release)
		return -EAGAIN;
fallback:
	pl->fallbacks++;
	return rc;
}

bool tp_planned_release_bytes(struct tp_policy *pol, uint64_t *bytes)
{
	struct tp_planned *pl = pol->plan;
	double sum = 0;

	if (!tp_planned_on(pol) || !pl->holds || !pl->in_iter ||
	    advance(pl, tp_prefetch_op_index(pol->pf)))
		return false;
	for (size_t i = 0; i < pl->n_open; i++) {
		const struct pwin *w = &pl->w[pl->open[i]];
		struct tp_tensor *t;

		if (w->how != TP_PLAN_SWAP)
			continue;
		t = tp_prefetch_named(pol->pf, w->name);
		if (t && !t->pins && tp_pol_index_has(pol->idx, t))
			sum += tp_filter_mem(t);
	}
	*bytes = (uint64_t)sum;
	return true;
}

void tp_planned_stats(struct tp_policy *pol, struct tp_stats *st)
{
	struct tp_planned *pl = pol->plan;

	if (!pl)
		return;
	st->plans = pl->plans;
	st->plan_hits = pl->hits;
	st->plan_fallbacks = pl->fallbacks;
	st->plan_breaks = pl->breaks;
}
