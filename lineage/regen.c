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

#include "ctx/ctx.h"
#include "ctx/log.h"
#include "lineage/lineage_int.h"

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
	/* one launch's arrays, sized for the widest record met */
	void **addr;
	size_t *bytes;
	struct tp_tensor **held;	/* acquired for this launch */
	bool *scratch;
	unsigned cap_io;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, nc * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
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

/* Release the pins of the top frame (its regenerated inputs). */
static void unpin_to(struct regen *r, size_t base)
{
	while (r->np > base)
		release_whole(r->lin, r->pin[--r->np]);
}

static int push_frame(struct regen *r, struct tp_tensor *t)
{
	struct tp_lineage *lin = r->lin;
	int64_t max = lin->ctx->conf.lineage_max_recompute_depth;

	if ((int64_t)r->nf >= max) {
		tp_ctx_error(lin->ctx, -TP_EDEPTH,
			     "lineage: regenerating tensor %llu needs more than %lld nested replays (lineage.max_recompute_depth)",
			     (unsigned long long)r->f[0].t->id, (long long)max);
		return -TP_EDEPTH;
	}
	if (grow((void **)&r->f, &r->cap_f, r->nf + 1, sizeof(*r->f)))
		return -ENOMEM;
	r->f[r->nf].t = t;
	r->f[r->nf].pin_base = r->np;
	r->nf++;
	if (r->nf > lin->st.max_depth)
		lin->st.max_depth = r->nf;
	return 0;
}

static int cannot(struct tp_lineage *lin, struct tp_tensor *t, const char *why)
{
	tp_ctx_error(lin->ctx, -TP_ENOREGEN,
		     "lineage: tensor %llu cannot be regenerated: %s",
		     (unsigned long long)t->id, why);
	return -TP_ENOREGEN;
}

/* @n came back: what its readers made is cheaper to regenerate now. */
static void cost_fell(struct tp_lineage *lin, struct tp_lin_node *n)
{
	struct tp_lin_use *u;
	unsigned k;

	if (!lin->cost_changed)
		return;
	for (u = n->users; u; u = u->next)
		for (k = 0; k < u->rec->n_out; k++) {
			struct tp_tensor *o = u->rec->out[k];

			if (o && !tp_pager_has_evicted(o))
				lin->cost_changed(lin->cost_changed_priv, o);
		}
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

		if (u->version != u->node->version)
			return cannot(lin, u->t, "an input was updated in place since");
		ret = tp_pager_acquire(lin->pg, u->t, 0, u->t->bytes,
				       TP_READ | TP_ACQ_NO_REGEN, &in_addr[k]);
		if (ret == -ESTALE) {
			*stale = u->t;
			ret = 1;
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
						TP_UNCOMPUTABLE | TP_KIND_WORKSPACE);
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
			goto out_release;
		}
		r->bytes[rec->n_in + k] = rec->out_bytes[k];
		r->held[held] = o;
		r->scratch[held++] = scratch;
	}
	ret = tp_lin_launch(lin, rec->type, rec->params, rec->params_len,
			    in_addr, r->bytes, rec->n_in, out_addr,
			    r->bytes + rec->n_in, rec->n_out, true, &ns);
	if (!ret) {
		tp_lin_note_cost(lin, rec, ns);
		tp_pager_note_recompute(lin->pg, ns);
		lin->st.replays++;
		lin->st.replay_ns += ns;
	} else {
		tp_ctx_error(lin->ctx, ret, "lineage: replaying %s failed",
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
				tp_ctx_error(lin->ctx, ret, "lineage: tensor %llu holds a failed replay's output",
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

	unpin_to(r, r->f[r->nf - 1].pin_base);
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

int tp_lineage_regenerate(struct tp_lineage *lin, struct tp_tensor *t)
{
	struct regen r = { .lin = lin };
	unsigned drops = 0;
	int ret = 0;

	if (!tp_pager_has_evicted(t))
		return 0;
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
		ret = replay(&r, rec, &stale);
		if (ret == 1) {
			ret = push_frame(&r, stale);
		} else if (!ret) {
			pop_frame(&r, rec);
		} else if (ret == -ENOMEM && r.np && drops < TP_LIN_MAX_DROPS) {
			/*
			 * The pins kept for frames below fill the budget: let
			 * them go and retry. What leaves is regenerated
			 * again when a frame finds it missing.
			 */
			unpin_to(&r, 0);
			for (size_t i = 0; i < r.nf; i++)
				r.f[i].pin_base = 0;
			drops++;
			lin->st.pin_drops++;
			ret = 0;
		}
	}
	unpin_to(&r, 0);
	free(r.f);
	free(r.pin);
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
