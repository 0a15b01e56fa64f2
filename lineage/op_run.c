/* SPDX-License-Identifier: MIT */
/*
 * tp_op_run(): acquire the inputs, allocate the outputs through the pager,
 * launch on the compute stream, record the op, release.
 *
 * In-place ops (TP_OP_INPLACE) come in two kinds:
 *  - the input is computable: Coop's recomputable in-place (§3.5). A new
 *    tensor takes the input's identity (its address and pages, through
 *    tp_pager_swap_identity) and is the output; the input's handle keeps
 *    the old version, moved to a fresh range and EVICTED, regenerable from
 *    its own producer. Records that read it still read the same version.
 *  - the input is uncomputable (a parameter, optimizer state): it is
 *    updated at its own address and stays the same handle; the output IS
 *    the input and its version is bumped. Whatever depended on the old
 *    version is severed first (inplace.c). The launch writes the only
 *    copy, so a launch function on such a tensor must fail, if at all,
 *    before it writes.
 *
 * One file, past the usual length: tp_op_run() in named steps over one
 * struct op_run, whose in-place and split paths share the steps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "lineage/lineage_int.h"
#include "tracer/tracer.h"
#include "vmm/vmm.h"

/* One tp_op_run(): what it was asked, and what it holds so far. */
struct op_run {
	struct tp_lineage *lin;
	const struct tp_op_type *type;
	const void *params;
	size_t params_len;
	const size_t *out_bytes;
	unsigned n_in, n_out;
	struct tp_tensor **in;		/* what is acquired for each input */
	unsigned *held;			/* the inputs in the order acquired
					 * (the first n_in_held are held) */
	unsigned *order;		/* the order acquire_all() tries */
	void **in_addr, **out_addr;
	size_t *in_bytes;
	struct tp_tensor **out;
	unsigned n_in_held, n_out_held, n_out_made;
	int failed_out;			/* the output acquire_all() could not have */
	bool recorded;
	struct tp_lin_rec *rec;		/* the record, when recorded */
	/* In place: output @io over input @ii (@x), written as input @rw_in;
	 * @nt takes @x's identity when the op is recorded. */
	bool inplace;
	int io, ii, rw_in;
	struct tp_tensor *x, *nt;
	bool split;			/* it ran in parts */
	uint64_t ns;			/* what it cost */
};

static int check_args(struct tp_lineage *lin, const struct tp_op_type *type,
		      const void *params, size_t params_len,
		      struct tp_tensor *const *inputs, unsigned n_in,
		      struct tp_tensor **outputs, const size_t *out_bytes,
		      unsigned n_out)
{
	unsigned k;

	if (!type || !type->launch)
		return -EINVAL;
	if ((n_in && !inputs) || !n_out || !outputs || !out_bytes ||
	    (params_len && !params)) {
		tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): missing argument",
			 type->name ? type->name : "?");
		return -EINVAL;
	}
	for (k = 0; k < n_in; k++) {
		const struct tp_lin_node *n;

		if (!inputs[k]) {
			tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): input %u is NULL",
				 type->name ? type->name : "?", k);
			return -EINVAL;
		}
		n = inputs[k]->lin.p;
		if (tp_pager_is_freed(inputs[k]) || (n && n->user_freed)) {
			tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): input %u (tensor %llu) was freed",
				 type->name ? type->name : "?", k,
				 (unsigned long long)inputs[k]->id);
			return -EINVAL;
		}
	}
	for (k = 0; k < n_out; k++) {
		if (!out_bytes[k]) {
			tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): output %u has size 0",
				 type->name ? type->name : "?", k);
			return -EINVAL;
		}
	}
	if (type->flags & TP_OP_INPLACE) {
		if (type->inplace_in < 0 || (unsigned)type->inplace_in >= n_in ||
		    type->inplace_out < 0 || (unsigned)type->inplace_out >= n_out) {
			tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): in-place output %d / input %d out of range",
				 type->name ? type->name : "?",
				 type->inplace_out, type->inplace_in);
			return -EINVAL;
		}
		if (out_bytes[type->inplace_out] !=
		    inputs[type->inplace_in]->bytes) {
			tp_error(&lin->errors, -EINVAL, "tp_op_run(%s): in-place output of %zu bytes over an input of %zu",
				 type->name ? type->name : "?",
				 out_bytes[type->inplace_out],
				 inputs[type->inplace_in]->bytes);
			return -EINVAL;
		}
		if (inputs[type->inplace_in]->pins) {
			tp_error(&lin->errors, -EBUSY, "tp_op_run(%s): in-place input is acquired",
				 type->name ? type->name : "?");
			return -EBUSY;
		}
	}
	return 0;
}

static void release_all(struct op_run *o)
{
	struct tp_pager *pg = o->lin->pg;

	while (o->n_out_held) {
		struct tp_tensor *t = o->out[--o->n_out_held];

		tp_pager_release(pg, t, 0, t->bytes);
	}
	while (o->n_in_held) {
		struct tp_tensor *t = o->in[o->held[--o->n_in_held]];

		tp_pager_release(pg, t, 0, t->bytes);
	}
}

/* Make output @k (a new tensor) unless it is given already. */
static int make_output(struct op_run *o, unsigned k, const size_t *out_bytes)
{
	struct tp_tensor *t;

	if (o->out[k])
		return 0;
	t = tp_pager_tensor_new(o->lin->pg, out_bytes[k], TP_KIND_ACT);
	if (!t)
		return -errno;
	o->out[k] = t;
	o->n_out_made = k + 1;
	/* Recorded outputs need a node for on_free. */
	if (o->recorded && !tp_pager_in_slab(t) && !tp_lin_node_get(o->lin, t))
		return -ENOMEM;
	return 0;
}

/*
 * Acquire the inputs in @order (@n_in indices) until one fails: 0, or
 * -errno with *@at its place in @order.
 */
static int acquire_inputs(struct op_run *o, const unsigned *order,
			  unsigned n_in, int rw_in, unsigned *at)
{
	struct tp_pager *pg = o->lin->pg;

	for (unsigned i = 0; i < n_in; i++) {
		unsigned k = order[i];
		struct tp_tensor *t = o->in[k];
		int ret = tp_pager_acquire(pg, t, 0, t->bytes,
					   (int)k == rw_in ? TP_RW : TP_READ,
					   &o->in_addr[k]);

		if (ret) {
			*at = i;
			return ret;
		}
		o->held[o->n_in_held++] = k;
		o->in_bytes[k] = t->bytes;
	}
	return 0;
}

/*
 * Acquire inputs, then make and acquire the outputs not given already.
 * An input to be regenerated that found no room while the inputs before
 * it were held is tried again first, with nothing held: a regeneration
 * holds what it replays, and those that are resident or in host swap
 * lose nothing by waiting (they come back after it, or stay).
 */
static int acquire_all(struct op_run *o, const size_t *out_bytes,
		       unsigned n_in, unsigned n_out, int rw_in)
{
	struct tp_pager *pg = o->lin->pg;
	unsigned *order = o->order, k, at = 0;
	int ret;

	for (k = 0; k < n_in; k++)
		order[k] = k;
	ret = acquire_inputs(o, order, n_in, rw_in, &at);
	if (ret && tp_lin_regen_retry(ret, o->in[order[at]], o->n_in_held)) {
		tp_lin_regen_first(o->in, n_in, order);
		release_all(o);
		ret = acquire_inputs(o, order, n_in, rw_in, &at);
	}
	if (ret) {
		tp_error(&o->lin->errors, ret, "tp_op_run(%s): input %u (tensor %llu)",
			 o->type->name ? o->type->name : "?", order[at],
			 (unsigned long long)o->in[order[at]]->id);
		return ret;
	}
	for (k = 0; k < n_out; k++) {
		struct tp_tensor *t = o->out[k];

		if (!t) {
			ret = make_output(o, k, out_bytes);
			if (ret)
				return ret;
			t = o->out[k];
			ret = tp_pager_acquire(pg, t, 0, t->bytes, TP_WRITE,
					       &o->out_addr[k]);
		} else {
			/* The in-place output: the input's pages. */
			o->out_addr[k] = o->in_addr[o->type->inplace_in];
			ret = tp_pager_acquire(pg, t, 0, t->bytes, TP_READ,
					       &o->out_addr[k]);
		}
		if (ret) {
			o->failed_out = (int)k;
			return ret;
		}
		o->n_out_held++;
	}
	return 0;
}

/*
 * The op did not fit whole, or a plan runs it in @parts: let go of what
 * an attempt holds and run it in parts (op_split.c) on the outputs, all
 * made now. A planned run that the backend cannot launch in parts
 * returns -ENOTSUP quietly: the op then runs as it would unplanned.
 */
/*
 * Whether the op's tensors hold more pages than the pool could give it
 * however its victims left: the room less what others pin (its own
 * inputs pinned already count as theirs). What is or would be in a slab
 * counts as nothing, so that only an op that surely does not fit is not
 * tried whole.
 */
static bool beyond_room(struct op_run *o, const size_t *out_bytes,
			unsigned n_in, unsigned n_out)
{
	struct tp_pager *pg = o->lin->pg;
	size_t need = 0, own = 0;
	unsigned k, j;

	if (!(o->type->flags & TP_OP_SPLITTABLE) ||
	    (o->type->flags & TP_OP_INPLACE))
		return false;
	for (k = 0; k < n_in; k++) {
		for (j = 0; j < k && o->in[j] != o->in[k]; j++)
			;
		if (j < k || tp_pager_in_slab(o->in[k]))
			continue;
		need += tp_pager_span_pages(pg, 0, o->in[k]->bytes);
		own += tp_pager_pinned_pages(o->in[k]);
	}
	for (k = 0; k < n_out; k++)
		if (!o->out[k])
			need += tp_pager_pages_for(pg, out_bytes[k]);
	/* Asked of ops that take more than half the pool, whose whole
	 * attempt is dear. */
	if (need <= tp_pager_span_pages(pg, 0, tp_pager_budget_bytes(pg)) / 2 ||
	    tp_pager_fits_now(pg, need))
		return false;
	return need > tp_pager_room_pages(pg) + own;
}

/*
 * Where an op in parts found no room: the first input that has evicted
 * pages, which a part cannot take by its rows alone but only once its
 * producer is replayed whole (or in parts of its own), and what that
 * replay's operands take. "" when every input was there to be read.
 */
static void regen_note(const struct op_run *o, unsigned n_in, char *buf,
		       size_t len)
{
	buf[0] = 0;
	for (unsigned k = 0; k < n_in; k++) {
		const struct tp_tensor *t = o->in[k];
		const struct tp_lin_rec *rec = t->lin.rec;

		if (!tp_pager_has_evicted(t) || !rec)
			continue;
		snprintf(buf, len, "; input %u (tensor %llu) comes back whole, by a replay of %s on %.1f MiB of operands",
			 k, (unsigned long long)t->id,
			 rec->type->name ? rec->type->name : "its op",
			 tp_lin_rec_bytes(rec) / (1 << 20));
		return;
	}
}

static int run_split(struct op_run *o, const void *params, size_t params_len,
		     const size_t *out_bytes, unsigned n_in, unsigned n_out,
		     const struct tp_op_split *cut, unsigned parts,
		     uint64_t *ns)
{
	const char *name = o->type->name ? o->type->name : "?";
	unsigned k;
	int ret;

	release_all(o);
	for (k = 0; k < n_out; k++) {
		ret = make_output(o, k, out_bytes);
		if (ret)
			return ret;
		/*
		 * What the attempt backed holds nothing yet: its chunks go
		 * back, so that the parts take them only as their rows come.
		 */
		if (!tp_pager_in_slab(o->out[k]))
			tp_pager_drop_contents(o->lin->pg, o->out[k]);
	}
	ret = tp_lin_run_split(o->lin, o->type, params, params_len, o->in,
			       n_in, o->out, n_out, cut, false, parts, ns);
	if (ret == -ENOTSUP && parts)
		return ret;
	/* A type whose launch cannot run parts here (cuDNN's convolutions
	 * on another batch): the op did not fit, which is what is said. */
	if (ret == -ENOTSUP) {
		tp_error(&o->lin->errors, -ENOMEM, "tp_op_run(%s): did not fit whole, and cannot run in parts on this backend",
			 name);
		return -ENOMEM;
	}
	if (ret == -ENOMEM) {
		struct tp_pager *pg = o->lin->pg;
		char note[256];

		/* What others hold is what a user can act on; and where an
		 * input must come back whole, that replay. */
		regen_note(o, n_in, note, sizeof(note));
		tp_error(&o->lin->errors, ret, "tp_op_run(%s): did not fit whole, nor in parts of its %zu rows (%zu of the budget's %zu pages not held by others%s)",
			 name, cut->rows, tp_pager_room_pages(pg),
			 tp_pager_span_pages(pg, 0, tp_pager_budget_bytes(pg)),
			 note);
	}
	else if (ret)
		tp_error(&o->lin->errors, ret, "tp_op_run(%s): a part of a split run failed",
			 name);
	return ret;
}

/* Free the outputs made by a run that failed (not a given in-place one). */
static void free_outputs(struct op_run *o, int keep)
{
	unsigned k;

	for (k = 0; k < o->n_out_made; k++) {
		if ((int)k == keep || !o->out[k])
			continue;
		tp_pager_tensor_free(o->lin->pg, o->out[k]);
		o->out[k] = NULL;
	}
}

/*
 * Recomputable in-place on computable @x: @nt takes @x's identity, @x is
 * left EVICTED at @nt's old range. Made resident first so @nt gets data.
 */
static int take_identity(struct op_run *o, struct tp_tensor *x,
			 struct tp_tensor *nt)
{
	struct tp_pager *pg = o->lin->pg;
	void *addr;
	int ret;

	ret = tp_pager_acquire(pg, x, 0, x->bytes, TP_READ, &addr);
	if (ret)
		return ret;
	tp_pager_release(pg, x, 0, x->bytes);
	ret = tp_pager_swap_identity(pg, x, nt);
	if (ret)
		return ret;
	/*
	 * Pinned, the data moved to @nt cannot leave while @x is dropped.
	 * @x's new range was never backed: its pages become EVICTED without
	 * a chunk, so the op needs no memory beyond its input and outputs.
	 */
	ret = tp_pager_acquire(pg, nt, 0, nt->bytes, TP_READ, &addr);
	if (!ret) {
		ret = tp_pager_drop_contents(pg, x);
		tp_pager_release(pg, nt, 0, nt->bytes);
	}
	if (ret)
		tp_pager_swap_identity(pg, x, nt);
	return ret;
}

/* Undo take_identity() after a failed launch: @x back home, EVICTED. */
static void give_identity_back(struct op_run *o, struct tp_tensor *x,
			       struct tp_tensor *nt)
{
	struct tp_pager *pg = o->lin->pg;

	if (tp_pager_swap_identity(pg, x, nt) ||
	    tp_pager_drop_contents(pg, x))
		tp_log(TP_LOG_ERROR, "tp_op_run: could not restore tensor %llu after a failed in-place op",
		       (unsigned long long)x->id);
}

/*
 * The parts a plan runs the op in (lineage.h, tp_op_hooks), 0:
 * whole. *@cut is how it may be cut, when *@can_cut.
 */
static unsigned planned_parts(struct op_run *o, const void *params,
			      size_t params_len, const size_t *out_bytes,
			      unsigned n_in, unsigned n_out,
			      struct tp_op_split *cut, bool *can_cut)
{
	const struct tp_op_hooks *h = &o->lin->op_hooks;

	*can_cut = false;
	if (!h->begin)
		return 0;
	if (h->wants_cut && h->wants_cut(h->priv))
		*can_cut = tp_lin_split_cut(o->lin, o->type, params,
					    params_len, o->in, n_in,
					    out_bytes, n_out, cut);
	return h->begin(h->priv, o->in, n_in, *can_cut ? cut : NULL);
}

/* The arrays of @o, one slot per input and output; 0 or -ENOMEM. */
static int op_arrays_new(struct op_run *o, struct tp_tensor *const *inputs)
{
	size_t ni = o->n_in ? o->n_in : 1, no = o->n_out ? o->n_out : 1;

	o->in = calloc(ni, sizeof(*o->in));
	o->held = calloc(ni, sizeof(*o->held));
	o->order = calloc(ni, sizeof(*o->order));
	o->in_addr = calloc(ni, sizeof(*o->in_addr));
	o->in_bytes = calloc(ni, sizeof(*o->in_bytes));
	o->out = calloc(no, sizeof(*o->out));
	o->out_addr = calloc(no, sizeof(*o->out_addr));
	if (!o->in || !o->held || !o->order || !o->in_addr ||
	    !o->in_bytes || !o->out || !o->out_addr)
		return -ENOMEM;
	if (o->n_in)	/* an op with no input may pass NULL */
		memcpy(o->in, inputs, o->n_in * sizeof(*inputs));
	return 0;
}

static void op_arrays_free(struct op_run *o)
{
	free(o->in);
	free(o->held);
	free(o->order);
	free(o->in_addr);
	free(o->in_bytes);
	free(o->out);
	free(o->out_addr);
}

/*
 * A record is kept only when the outputs can be regenerated from it: not
 * for nondeterministic ops, nor for an update in place of contents that
 * cannot be regenerated (the old version is gone).
 */
static int op_record_begin(struct op_run *o, struct tp_tensor *const *inputs)
{
	const struct tp_op_type *type = o->type;

	o->recorded = !(type->flags & TP_OP_NONDETERMINISTIC) &&
		      !(o->inplace && (!tp_lineage_can_regenerate(o->lin, o->x) ||
				       tp_pager_in_slab(o->x)));
	if (!o->recorded)
		return tp_lin_type_get(o->lin, type) ? 0 : -ENOMEM;
	o->rec = tp_lin_rec_new(o->lin, type, o->params, o->params_len, inputs,
				o->n_in, o->out_bytes, o->n_out);
	return o->rec ? 0 : -ENOMEM;
}

/*
 * An in-place op's output. On a recorded input, a new tensor o->nt takes
 * its identity (recomputable in-place, see the top of this file) and the
 * launch reads the old version where it now is; on an input that cannot
 * be regenerated, the input itself, severed from what read its old
 * version. On error o->nt, if set, holds no identity yet.
 */
static int op_inplace_prepare(struct op_run *o)
{
	struct tp_tensor *x = o->x;
	unsigned k;
	int ret;

	if (!o->inplace)
		return 0;
	if (!o->recorded) {
		ret = tp_lin_sever(o->lin, x);
		if (ret)
			return ret;
		o->out[o->io] = x;
		o->rw_in = o->ii;
		return 0;
	}
	o->nt = tp_pager_tensor_new(o->lin->pg, x->bytes, x->flags);
	if (!o->nt)
		return -errno;
	if (!tp_lin_node_get(o->lin, o->nt))
		return -ENOMEM;
	ret = take_identity(o, x, o->nt);
	if (ret) {
		tp_error(&o->lin->errors, ret, "tp_op_run(%s): in-place on tensor %llu",
			 o->type->name ? o->type->name : "?",
			 (unsigned long long)x->id);
		return ret;
	}
	for (k = 0; k < o->n_in; k++)
		if (o->in[k] == x)
			o->in[k] = o->nt;
	o->out[o->io] = o->nt;
	o->rw_in = o->ii;
	return 0;
}

/*
 * Run the op: in the parts a plan asks for; else whole; else, when it
 * does not fit whole and can be cut, in parts. Sets o->ns and o->split.
 */
static int op_execute(struct op_run *o)
{
	const char *name = o->type->name ? o->type->name : "?";
	struct tp_op_split cut;
	unsigned parts;
	bool can_cut, beyond;
	int ret;

	parts = planned_parts(o, o->params, o->params_len, o->out_bytes,
			      o->n_in, o->n_out, &cut, &can_cut);
	if (parts >= 2 && can_cut) {
		ret = run_split(o, o->params, o->params_len, o->out_bytes,
				o->n_in, o->n_out, &cut, parts, &o->ns);
		if (!ret) {
			o->split = true;
			return 0;
		}
		/*
		 * Not in parts on this backend, or not in the plan's parts
		 * with the room there is now (the plan was made for the
		 * last iteration's): as if unplanned, whole or in as many
		 * parts as it takes. Not an op that wrote its input in
		 * place, whose parts may have run.
		 */
		if (ret != -ENOTSUP && (ret != -ENOMEM || o->inplace))
			return ret;
		free_outputs(o, o->io);
		o->n_out_made = 0;
	}
	/*
	 * Asked only once the op does not fit: whole runs pay nothing. One
	 * beyond the pool's room is not tried whole, which would only bring
	 * its inputs back from host swap to fail.
	 */
	beyond = beyond_room(o, o->out_bytes, o->n_in, o->n_out) &&
		 tp_lin_split_cut(o->lin, o->type, o->params, o->params_len,
				  o->in, o->n_in, o->out_bytes, o->n_out, &cut);
	ret = beyond ? -ENOMEM : acquire_all(o, o->out_bytes, o->n_in,
					     o->n_out, o->rw_in);
	if (ret == -ENOMEM &&
	    (beyond || tp_lin_split_cut(o->lin, o->type, o->params,
					o->params_len, o->in, o->n_in,
					o->out_bytes, o->n_out, &cut))) {
		ret = run_split(o, o->params, o->params_len, o->out_bytes,
				o->n_in, o->n_out, &cut, 0, &o->ns);
		if (!ret)
			o->split = true;
		return ret;
	}
	if (ret) {
		/* An output's failure is said here, once a split is out. */
		if (o->failed_out >= 0)
			tp_error(&o->lin->errors, ret, "tp_op_run(%s): output %d of %zu bytes",
				 name, o->failed_out,
				 o->out_bytes[o->failed_out]);
		return ret;
	}
	ret = tp_lin_launch(o->lin, o->type, o->params, o->params_len,
			    o->in_addr, o->in_bytes, o->n_in, o->out_addr,
			    o->out_bytes, o->n_out, false, NULL, &o->ns);
	if (ret)
		tp_error(&o->lin->errors, ret, "tp_op_run(%s): launch failed", name);
	return ret;
}

/*
 * The op ran: its cost, its record's outputs, the in-place input's new
 * version, the outputs' last access, the plan's hook.
 */
static void op_finish(struct op_run *o)
{
	struct tp_lineage *lin = o->lin;
	struct tp_lin_rec *rec = o->rec;
	bool timed;
	unsigned k;

	/*
	 * Timed on the device: the cost is folded in when it is known. The
	 * parts of a split run are not: their pairs go unclaimed, and the
	 * cost is the parts' priors.
	 */
	timed = !o->split && tp_lin_timing_claim(lin, rec,
						 rec ? NULL :
						 tp_lin_type_get(lin, o->type));
	if (rec) {
		/*
		 * Slab tensors never leave: nothing to regenerate. Those
		 * whose rows of the other outputs a last pass reads are
		 * kept for that (a failure to keep one only loses the way).
		 */
		for (k = 0; k < o->n_out; k++)
			if (!tp_pager_in_slab(o->out[k]))
				tp_lin_rec_attach(lin, rec, k, o->out[k]);
			else if (o->type->flags & TP_OP_SPLIT_LAST_READS)
				(void)tp_lin_rec_keep_whole(lin, rec, k,
							    o->out[k]);
		if (!timed)
			tp_lin_note_cost(lin, rec, o->ns);
		if (!rec->refs)
			tp_lin_rec_discard(lin, rec);
	} else if (!timed) {
		tp_lin_note_type_cost(lin, tp_lin_type_get(lin, o->type),
				      o->ns);
	}
	if (o->inplace && !o->recorded) {
		struct tp_lin_node *xn = o->x->lin.p;

		/* A new version that no record can regenerate. */
		tp_lin_detach(lin, o->x);
		if (xn)
			xn->version++;
	}
	if (!timed)
		tp_pager_note_compute(o->lin->pg, o->ns);
	/* Written until the op ends: that is their last access. */
	for (k = 0; k < o->n_out; k++)
		tp_pager_touch(o->lin->pg, o->out[k]);
	if (lin->op_hooks.end)
		lin->op_hooks.end(lin->op_hooks.priv, o->in, o->n_in, o->out,
				  o->n_out, o->ns);
}

static int op_run(struct tp_lineage *lin, const struct tp_op_type *type,
		  const void *params, size_t params_len,
		  struct tp_tensor *const *inputs, unsigned n_in,
		  struct tp_tensor **outputs, const size_t *out_bytes,
		  unsigned n_out)
{
	struct op_run o = {
		.lin = lin, .type = type,
		.params = params, .params_len = params_len,
		.out_bytes = out_bytes, .n_in = n_in, .n_out = n_out,
		.failed_out = -1, .io = -1, .ii = -1, .rw_in = -1,
	};
	unsigned k;
	int ret;

	ret = check_args(lin, type, params, params_len, inputs, n_in,
			 outputs, out_bytes, n_out);
	if (ret)
		return ret;
	o.inplace = type->flags & TP_OP_INPLACE;
	if (o.inplace) {
		o.io = type->inplace_out;
		o.ii = type->inplace_in;
		o.x = inputs[o.ii];
	}
	ret = op_arrays_new(&o, inputs);
	if (ret)
		goto out_free;
	ret = op_record_begin(&o, inputs);
	if (ret)
		goto out_rec;
	ret = op_inplace_prepare(&o);
	if (ret)
		goto out_nt;
	ret = op_execute(&o);
	if (ret)
		goto out_release;
	op_finish(&o);
	release_all(&o);
	for (k = 0; k < n_out; k++)
		outputs[k] = o.out[k];
	op_arrays_free(&o);
	return 0;

out_release:
	release_all(&o);
	free_outputs(&o, o.io);
	if (o.nt)
		give_identity_back(&o, o.x, o.nt);
out_nt:
	if (o.nt)
		tp_pager_tensor_free(lin->pg, o.nt);
out_rec:
	if (o.rec)
		tp_lin_rec_discard(o.lin, o.rec);
out_free:
	op_arrays_free(&o);
	return ret;
}

int tp_lineage_op_run(struct tp_lineage *lin, const struct tp_op_type *type,
		      const void *params, size_t params_len,
		      struct tp_tensor *const *inputs, unsigned n_in,
		      struct tp_tensor **outputs, const size_t *out_bytes,
		      unsigned n_out)
{
	uint64_t t0;
	int ret;

	if (!lin)
		return -EINVAL;
	t0 = lin->tracer ? tp_vmm_now_ns(lin->vmm) : 0;
	/* One request: its inputs, outputs and parts share one bound. */
	tp_pager_work_begin(lin->pg);
	ret = op_run(lin, type, params, params_len, inputs, n_in, outputs,
		     out_bytes, n_out);
	tp_pager_work_end(lin->pg);
	if (lin->tracer && type)
		tp_tracer_issue(lin->tracer, type->name, t0,
				tp_vmm_now_ns(lin->vmm));
	return ret;
}
