/* SPDX-License-Identifier: MIT */
/*
 * Regeneration: replay the producer of an evicted tensor, regenerating its
 * evicted inputs first, on an explicit work stack so that a chain of any
 * length regenerates without using the C stack.
 *
 * Each frame wants one tensor. It acquires its producer's inputs with
 * TP_ACQ_NO_REGEN, so the pager never calls back into lineage; an input
 * found EVICTED (-ESTALE) gets a frame of its own above. A finished frame
 * leaves what it regenerated pinned for the frame below, so making room
 * for the next input cannot evict it again: every retry of a frame pins
 * one more input, and a frame of n inputs is retried at most n times.
 * Those pins can fill a small budget (a deep stack of wide ops); when a
 * replay finds no room, they are all let go and the walk goes on, a
 * bounded number of times.
 *
 * Outputs: the evicted outputs of the producer are all regenerated (they
 * are written in the same launch); an output that is resident, offloaded
 * or gone gets a scratch buffer for the launch to write into, so that
 * nothing a reader may hold is written.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "base/array.h"
#include "base/log.h"
#include "lineage/lineage_int.h"

/* Regenerations nested through the pager (see input_mode()). */
#define TP_LIN_MAX_NESTING	4

/* Times one regeneration may give up its pins under memory pressure. */
#define TP_LIN_MAX_DROPS	256

struct frame {
	struct tp_tensor *t;
	size_t pin_base;	/* its pins start here on the pin stack */
};

struct regen {
	struct tp_lineage *lin;
	struct frame *f;
	size_t nf, cap_f;
	struct tp_tensor **pin;
	size_t np, cap_p;
	/* pins let go that leave by offload only until the walk ends */
	struct tp_tensor **kept;
	size_t nk, cap_k;
	/* one launch's arrays, sized for the widest record met */
	void **addr;
	size_t *bytes;
	struct tp_tensor **held;	/* acquired for this launch */
	bool *scratch;
	unsigned cap_io;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *np;

	if (need <= *cap)
		return 0;
	np = tp_array_grow(*p, cap, need, elem, 16);
	if (!np)
		return -ENOMEM;
	*p = np;
	return 0;
}

static int io_grow(struct regen *r, unsigned n)
{
	size_t cap = r->cap_io, c;

	if (n <= r->cap_io)
		return 0;
	c = cap;
	if (grow((void **)&r->addr, &c, n, sizeof(*r->addr)))
		return -ENOMEM;
	c = cap;
	if (grow((void **)&r->bytes, &c, n, sizeof(*r->bytes)))
		return -ENOMEM;
	c = cap;
	if (grow((void **)&r->held, &c, n, sizeof(*r->held)))
		return -ENOMEM;
	c = cap;
	if (grow((void **)&r->scratch, &c, n, sizeof(*r->scratch)))
		return -ENOMEM;
	r->cap_io = (unsigned)c;
	return 0;
}

static void release_whole(struct tp_lineage *lin, struct tp_tensor *t)
{
	tp_pager_release(lin->pg, t, 0, t->bytes);
}

/*
 * Release the pins of the frames from @base on (their regenerated
 * inputs). With @keep, what they held may still leave for host swap but
 * is not evicted until the walk ends (tp_pager_hold_rows()): a tensor
 * evicted to make room for its sibling is regenerated again, and the
 * sibling then evicted for it, around a join of two large ones. Not
 * under a policy that never uses host swap (the evict-only baselines
 * keep their papers' rules).
 */
static void unpin_to(struct regen *r, size_t base, bool keep)
{
	struct tp_pager *pg = r->lin->pg;

	keep = keep && tp_pager_policy_swaps(pg);
	while (r->np > base) {
		struct tp_tensor *t = r->pin[--r->np];

		if (keep && tp_pager_can_offload(t) &&
		    !grow((void **)&r->kept, &r->cap_k, r->nk + 1,
			  sizeof(*r->kept))) {
			tp_pager_hold_rows(pg, t, true);
			r->kept[r->nk++] = t;
		}
		release_whole(r->lin, t);
	}
}

/*
 * The walk rewrites @t and reads its producer's inputs, and the policy is
 * told so (tp_lineage_regen_needs): the record of the program's accesses
 * may say that no one uses them again, and what no one uses again leaves
 * first, for nothing. Taken at its word, an input the walk regenerated
 * for one reader leaves as soon as the frames above that reader make
 * room, before another reader met later in the walk reads it; that one
 * regenerates it again with its evicted ancestry, and along a chain of
 * such joins (Inception's blocks) the replays multiply.
 */
static void mark_needed(struct tp_lineage *lin, struct tp_tensor *t)
{
	struct tp_lin_node *n = t->lin.p;
	struct tp_lin_rec *rec = t->lin.rec;
	unsigned k;

	if (n)
		n->walk = lin->walk;
	for (k = 0; rec && k < rec->n_in; k++)
		rec->in[k].node->walk = lin->walk;
}

bool tp_lineage_regen_reads(struct tp_lineage *lin, const struct tp_tensor *t)
{
	const struct tp_lin_node *n = t->lin.p;

	return lin->nesting && n && n->pending;
}

bool tp_lineage_regen_needs(struct tp_lineage *lin, const struct tp_tensor *t)
{
	const struct tp_lin_node *n = t->lin.p;

	return lin->nesting && n && n->walk == lin->walk;
}

void tp_lineage_made_from(struct tp_lineage *lin, const struct tp_tensor *t,
			  void (*fn)(void *priv, const struct tp_tensor *o),
			  void *priv)
{
	const struct tp_lin_node *n = t->lin.p;

	(void)lin;
	for (const struct tp_lin_use *u = n ? n->users : NULL; u;
	     u = u->next) {
		const struct tp_lin_rec *rec = u->rec;

		/* A record that cannot replay reads nothing again. */
		if (!rec->replayable)
			continue;
		for (unsigned k = 0; k < rec->n_out; k++)
			if (rec->out[k] && !rec->out[k]->dead)
				fn(priv, rec->out[k]);
	}
}

/*
 * Frame @i's reads of its record's inputs: to come (+1) or done (-1). A
 * tensor a frame on the stack is still to read is read now, as far as
 * the room-making of the frames above it is concerned
 * (tp_lineage_regen_reads()).
 */
static void frame_reads(struct regen *r, size_t i, int d)
{
	struct tp_lin_rec *rec = r->f[i].t->lin.rec;

	for (unsigned k = 0; rec && k < rec->n_in; k++)
		rec->in[k].node->pending += d;
}

static int push_frame(struct regen *r, struct tp_tensor *t)
{
	struct tp_lineage *lin = r->lin;
	int64_t max = lin->conf.max_recompute_depth;

	if ((int64_t)r->nf >= max) {
		tp_error(&lin->errors, -TP_EDEPTH,
			 "lineage: regenerating tensor %llu needs more than %lld nested replays (lineage.max_recompute_depth)",
			 (unsigned long long)r->f[0].t->id, (long long)max);
		return -TP_EDEPTH;
	}
	if (grow((void **)&r->f, &r->cap_f, r->nf + 1, sizeof(*r->f)))
		return -ENOMEM;
	r->f[r->nf].t = t;
	r->f[r->nf].pin_base = r->np;
	r->nf++;
	mark_needed(lin, t);
	frame_reads(r, r->nf - 1, 1);
	if (r->nf > lin->st.max_depth)
		lin->st.max_depth = r->nf;
	return 0;
}

static int cannot(struct tp_lineage *lin, struct tp_tensor *t, const char *why)
{
	tp_error(&lin->errors, -TP_ENOREGEN,
		 "lineage: tensor %llu cannot be regenerated: %s",
		 (unsigned long long)t->id, why);
	return -TP_ENOREGEN;
}

/*
 * How a frame acquires an input. One with EVICTED pages is regenerated by
 * a frame of its own (TP_ACQ_NO_REGEN: -ESTALE). One that is only
 * offloaded is acquired plainly, so the pager may regenerate it instead
 * of reloading it when the policy finds that cheaper (DELTA §5.5), which
 * nests a regeneration on the C stack: a few levels at most, deeper ones
 * reload.
 */
static unsigned input_mode(struct tp_lineage *lin, const struct tp_tensor *t)
{
	if (tp_pager_has_evicted(t) || lin->nesting >= TP_LIN_MAX_NESTING ||
	    tp_pager_is_resident(t) || !tp_lineage_can_regenerate(lin, t))
		return TP_READ | TP_ACQ_NO_REGEN;
	return TP_READ;
}

/*
 * @n came back: what its readers made is cheaper to regenerate now, and
 * its inputs cheaper to evict (they no longer feed an evicted tensor,
 * tp_lineage_evict_cost). Tensors farther away whose evicted
 * neighbourhood reached through @n are not told: a walk over the whole
 * component at each tensor a long regeneration brings back costs more
 * than the choices it would sharpen (a stale key only waits longer).
 */
static void cost_fell(struct tp_lineage *lin, struct tp_lin_node *n)
{
	struct tp_lin_rec *rec = n->t->lin.rec;
	struct tp_lin_use *u;
	unsigned k;

	if (!lin->op_hooks.cost_changed)
		return;
	for (k = 0; rec && k < rec->n_in; k++) {
		struct tp_tensor *i = rec->in[k].t;

		if (!tp_pager_has_evicted(i))
			lin->op_hooks.cost_changed(lin->op_hooks.priv, i);
	}
	for (u = n->users; u; u = u->next)
		for (k = 0; k < u->rec->n_out; k++) {
			struct tp_tensor *o = u->rec->out[k];

			if (o && !tp_pager_has_evicted(o))
				lin->op_hooks.cost_changed(lin->op_hooks.priv, o);
		}
}

/* @t, if the walk keeps it from eviction, is no longer kept. */
static void let_go_kept(struct regen *r, struct tp_tensor *t)
{
	for (size_t i = r->nk; i-- > 0;) {
		if (r->kept[i] != t)
			continue;
		tp_pager_hold_rows(r->lin->pg, t, false);
		r->kept[i] = r->kept[--r->nk];
	}
}

/*
 * The outputs of @rec did not fit beside its inputs. If its op may run in
 * parts (op_split.c, policy.split): let go of all that r->held holds
 * (*@n_held: the inputs, then the outputs acquired so far; 0 after), and
 * replay it in parts into the outputs that are evicted and scratch for
 * the others, as the whole replay would have. An input the frames
 * regenerated stays pinned by them; one that was resident may leave as
 * the parts are done with its rows. Else -ENOMEM, nothing let go.
 */
static int replay_split(struct regen *r, struct tp_lin_rec *rec,
			unsigned *n_held)
{
	struct tp_lineage *lin = r->lin;
	struct tp_tensor **out = calloc(rec->n_out, sizeof(*out));
	bool *scratch = calloc(rec->n_out, sizeof(*scratch));
	struct tp_tensor **in = calloc(rec->n_in + 1, sizeof(*in));
	struct tp_op_split cut;
	uint64_t ns = 0;
	unsigned k;
	int ret = -ENOMEM;

	if (!out || !scratch || !in)
		goto out;
	for (k = 0; k < rec->n_in; k++)
		in[k] = rec->in[k].t;
	if (!tp_lin_split_cut(lin, rec->type, rec->params, rec->params_len,
			      in, rec->n_in, rec->out_bytes, rec->n_out, &cut))
		goto out;
	/* The parts read them now, and let go of the rows they read. */
	for (k = 0; k < rec->n_in; k++)
		let_go_kept(r, in[k]);
	for (k = 0; k < *n_held; k++) {
		release_whole(lin, r->held[k]);
		if (k < rec->n_in)
			continue;
		if (r->scratch[k])
			tp_pager_tensor_free(lin->pg, r->held[k]);
		else
			tp_pager_drop_contents(lin->pg, r->held[k]);
	}
	*n_held = 0;
	for (k = 0; k < rec->n_out; k++) {
		out[k] = rec->out[k];
		if (out[k] && tp_pager_has_evicted(out[k]))
			continue;
		out[k] = tp_pager_tensor_new(lin->pg, rec->out_bytes[k],
					     TP_UNCOMPUTABLE | TP_SCRATCH |
					     TP_KIND_WORKSPACE);
		if (!out[k]) {
			ret = -errno;
			goto out;
		}
		scratch[k] = true;
		lin->st.scratch_outputs++;
	}
	ret = tp_lin_run_split(lin, rec->type, rec->params, rec->params_len,
			       in, rec->n_in, out, rec->n_out, &cut, true, 0,
			       &ns);
	if (ret == -ENOTSUP)	/* no parts on this backend: did not fit */
		ret = -ENOMEM;
	if (!ret) {
		tp_lin_note_cost(lin, rec, ns);
		tp_pager_note_recompute(lin->pg, ns);
		lin->st.replay_ns += ns;
		lin->st.replays++;
	}
	for (k = 0; k < rec->n_out; k++) {
		struct tp_lin_node *on;

		if (!out[k])
			continue;
		if (scratch[k]) {
			tp_pager_tensor_free(lin->pg, out[k]);
		} else if (ret) {
			/* Half written: evicted again (a pinned page keeps
			 * what it held, see acquire's err_regen). */
			tp_pager_drop_contents(lin->pg, out[k]);
		} else if ((on = out[k]->lin.p)) {
			tp_lin_uf_forget(lin, on);
			cost_fell(lin, on);
		}
	}
out:
	free(out);
	free(scratch);
	free(in);
	return ret;
}

/*
 * Replay @rec once, all inputs resident. Return 0, 1 when input @*stale
 * was found EVICTED (a frame must regenerate it first), or -errno.
 */
static int replay(struct regen *r, struct tp_lin_rec *rec,
		  struct tp_tensor **stale)
{
	struct tp_lineage *lin = r->lin;
	unsigned n = rec->n_in + rec->n_out, k, j, held = 0, root_k = UINT_MAX;
	void **in_addr, **out_addr;
	uint64_t ns = 0;
	int ret = 0;

	if (io_grow(r, n))
		return -ENOMEM;
	in_addr = r->addr;
	out_addr = r->addr + rec->n_in;
	for (k = 0; k < rec->n_out; k++)
		if (rec->out[k] == r->f[0].t)
			root_k = k;
	for (k = 0; k < rec->n_in; k++) {
		struct tp_lin_use *u = &rec->in[k];

		if (u->version != u->node->version) {
			ret = cannot(lin, u->t, "an input was updated in place since");
			goto out_release;
		}
		ret = tp_pager_acquire(lin->pg, u->t, 0, u->t->bytes,
				       input_mode(lin, u->t), &in_addr[k]);
		if (ret == -ESTALE) {
			*stale = u->t;
			ret = 1;
			goto out_release;
		}
		if (ret == -ENOMEM && !r->np) {
			ret = replay_split(r, rec, &held);
			goto out_release;
		}
		if (ret)
			goto out_release;
		r->bytes[k] = u->t->bytes;
		r->held[held] = u->t;
		r->scratch[held++] = false;
	}
	/*
	 * The tensor being regenerated for a caller is pinned by it: if the
	 * launch failed, its pages could not be dropped back to EVICTED. So
	 * it is acquired last, once nothing but the launch can fail.
	 */
	for (j = 0; j < rec->n_out; j++) {
		struct tp_tensor *o;
		bool scratch;

		k = j;
		if (root_k < rec->n_out)
			k = j < root_k ? j : (j == rec->n_out - 1 ? root_k : j + 1);
		o = rec->out[k];
		scratch = !o || !tp_pager_has_evicted(o);

		if (scratch) {
			o = tp_pager_tensor_new(lin->pg, rec->out_bytes[k],
						TP_UNCOMPUTABLE | TP_SCRATCH |
						TP_KIND_WORKSPACE);
			if (!o) {
				ret = -errno;
				goto out_release;
			}
			lin->st.scratch_outputs++;
		}
		ret = tp_pager_acquire(lin->pg, o, 0, rec->out_bytes[k],
				       TP_WRITE | TP_ACQ_NO_REGEN, &out_addr[k]);
		if (ret) {
			if (scratch)
				tp_pager_tensor_free(lin->pg, o);
			if (ret == -ENOMEM)
				ret = replay_split(r, rec, &held);
			goto out_release;
		}
		r->bytes[rec->n_in + k] = rec->out_bytes[k];
		r->held[held] = o;
		r->scratch[held++] = scratch;
	}
	ret = tp_lin_launch(lin, rec->type, rec->params, rec->params_len,
			    in_addr, r->bytes, rec->n_in, out_addr,
			    r->bytes + rec->n_in, rec->n_out, true, NULL, &ns);
	if (!ret) {
		/* Timed on the device: op_timing.c folds the cost in later. */
		if (!tp_lin_timing_claim(lin, rec, NULL)) {
			tp_lin_note_cost(lin, rec, ns);
			tp_pager_note_recompute(lin->pg, ns);
			lin->st.replay_ns += ns;
		}
		lin->st.replays++;
	} else {
		tp_error(&lin->errors, ret, "lineage: replaying %s failed",
			 rec->type->name ? rec->type->name : "an op");
	}
out_release:
	while (held) {
		struct tp_tensor *t = r->held[--held];

		release_whole(lin, t);
		if (r->scratch[held]) {
			tp_pager_tensor_free(lin->pg, t);
		} else if (held >= rec->n_in && ret) {
			/* Written with garbage or half-written: evicted again
			 * (not possible while its caller pins it). */
			if (tp_pager_drop_contents(lin->pg, t))
				tp_error(&lin->errors, ret, "lineage: tensor %llu holds a failed replay's output",
					 (unsigned long long)t->id);
		} else if (held >= rec->n_in) {
			struct tp_lin_node *on = t->lin.p;

			if (on) {
				tp_lin_uf_forget(lin, on);
				cost_fell(lin, on);
			}
		}
	}
	return ret;
}

/* The top frame is done: drop its pins, pin its result for the one below. */
static void pop_frame(struct regen *r, struct tp_lin_rec *rec)
{
	struct tp_lineage *lin = r->lin;
	unsigned k;

	unpin_to(r, r->f[r->nf - 1].pin_base, false);
	frame_reads(r, r->nf - 1, -1);
	r->nf--;
	if (!r->nf || !rec)
		return;
	for (k = 0; k < rec->n_out; k++) {
		struct tp_tensor *o = rec->out[k];
		void *addr;

		if (!o || tp_pager_has_evicted(o) ||
		    grow((void **)&r->pin, &r->cap_p, r->np + 1, sizeof(*r->pin)))
			continue;
		if (!tp_pager_acquire(lin->pg, o, 0, o->bytes,
				      TP_READ | TP_ACQ_NO_REGEN, &addr))
			r->pin[r->np++] = o;
	}
}

/*
 * lineage.recompute_limit: DTR's thrash rule, checked before each replay
 * rather than between the program's ops, which one regeneration may
 * keep apart for as long as it likes.
 */
static int recompute_bound(struct tp_lineage *lin)
{
	int64_t limit = lin->conf.recompute_limit;
	uint64_t spent = tp_pager_iter_recompute_ns(lin->pg);

	if (limit <= 0 || spent <= (uint64_t)limit)
		return 0;
	tp_error(&lin->errors, -TP_EWORK,
		 "lineage: this iteration spent %llu ns recomputing, over lineage.recompute_limit = %lld",
		 (unsigned long long)spent, (long long)limit);
	return -TP_EWORK;
}

int tp_lineage_regenerate(struct tp_lineage *lin, struct tp_tensor *t)
{
	struct regen r = { .lin = lin };
	unsigned drops = 0;
	int ret = 0;

	if (!tp_pager_has_evicted(t))
		return 0;
	/* A regeneration nested in this one is part of its walk. */
	if (!lin->nesting++)
		lin->walk++;
	tp_pager_replay_begin(lin->pg);
	ret = push_frame(&r, t);
	while (!ret && r.nf) {
		struct tp_tensor *x = r.f[r.nf - 1].t, *stale = NULL;
		struct tp_lin_node *n = x->lin.p;
		struct tp_lin_rec *rec = x->lin.rec;

		if (!tp_pager_has_evicted(x)) {
			pop_frame(&r, rec);
			continue;
		}
		if (!n || !rec)
			ret = cannot(lin, x, "it was not made by an op");
		else if (!rec->replayable)
			ret = cannot(lin, x, "its op is not deterministic");
		if (ret)
			break;
		/* A walk whose replays make room for each other stops. */
		ret = tp_pager_work(lin->pg, 1, true);
		if (!ret)
			ret = recompute_bound(lin);
		if (ret)
			break;
		ret = replay(&r, rec, &stale);
		if (ret == 1) {
			ret = push_frame(&r, stale);
		} else if (!ret) {
			pop_frame(&r, rec);
		} else if (ret == -ENOMEM && r.np && drops < TP_LIN_MAX_DROPS) {
			/*
			 * The pins kept for frames below fill the budget: let
			 * them go and retry. What leaves is regenerated
			 * again when a frame finds it missing; from the
			 * second time, where the policy uses host swap, it
			 * leaves for host swap instead.
			 */
			unpin_to(&r, 0, drops > 0);
			for (size_t i = 0; i < r.nf; i++)
				r.f[i].pin_base = 0;
			drops++;
			lin->st.pin_drops++;
			/* A retry, itself bounded: the request's work count
			 * starts afresh. */
			tp_pager_work_retry(lin->pg);
			ret = 0;
		}
	}
	while (r.nf)
		frame_reads(&r, --r.nf, -1);
	unpin_to(&r, 0, false);
	while (r.nk)
		tp_pager_hold_rows(lin->pg, r.kept[--r.nk], false);
	tp_pager_replay_end(lin->pg);
	lin->nesting--;
	free(r.f);
	free(r.pin);
	free(r.kept);
	free(r.addr);
	free(r.bytes);
	free(r.held);
	free(r.scratch);
	return ret;
}

int tp_lin_regenerate_cb(void *priv, struct tp_tensor *t)
{
	return tp_lineage_regenerate(priv, t);
}
