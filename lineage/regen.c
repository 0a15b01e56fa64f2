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
#include "lineage/regen_walk.h"

/* Times one regeneration may give up its pins under memory pressure. */
#define TP_LIN_MAX_DROPS	256

int tp_regen_grow(void **p, size_t *cap, size_t need, size_t elem)
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

void tp_regen_release_whole(struct tp_lineage *lin, struct tp_tensor *t)
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
		    !tp_regen_grow((void **)&r->kept, &r->cap_k, r->nk + 1,
			  sizeof(*r->kept))) {
			tp_pager_hold_rows(pg, t, true);
			r->kept[r->nk++] = t;
		}
		tp_regen_release_whole(r->lin, t);
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
	if (tp_regen_grow((void **)&r->f, &r->cap_f, r->nf + 1, sizeof(*r->f)))
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

int tp_regen_cannot(struct tp_lineage *lin, struct tp_tensor *t,
		    const char *why)
{
	tp_error(&lin->errors, -TP_ENOREGEN,
		 "lineage: tensor %llu cannot be regenerated: %s",
		 (unsigned long long)t->id, why);
	return -TP_ENOREGEN;
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
		    tp_regen_grow((void **)&r->pin, &r->cap_p, r->np + 1, sizeof(*r->pin)))
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
			ret = tp_regen_cannot(lin, x, "it was not made by an op");
		else if (!rec->replayable)
			ret = tp_regen_cannot(lin, x, "its op is not deterministic");
		if (ret)
			break;
		/* A walk whose replays make room for each other stops. */
		ret = tp_pager_work(lin->pg, 1, true);
		if (!ret)
			ret = recompute_bound(lin);
		if (ret)
			break;
		ret = tp_regen_replay(&r, rec, &stale);
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
