/* SPDX-License-Identifier: MIT */
/*
 * Recording one iteration's acquisitions and replaying them as prefetches.
 *
 * One file, past the usual length: the recorder, the replayer and the
 * planner's view of the program's ops (the last section) all read the
 * one recorded iteration (struct tp_prefetch), which completion threads
 * update under its lock and no other file may see.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "pager/pager.h"
#include "policy/prefetch.h"

#define PF_USED		(1u << 0)	/* table slot holds an entry */
#define PF_INFLIGHT	(1u << 1)	/* prefetch issued, not completed */
#define PF_UNUSED	(1u << 2)	/* prefetched, not acquired since */
#define PF_REFUSED	(1u << 3)	/* the pager could not bring it back:
					 * not again until it is used or leaves */

/* What is known of one tensor, by id. */
struct pf_ent {
	uint64_t id;
	struct tp_tensor *t;
	uint32_t gen;		/* iteration the fields below belong to */
	uint32_t born;		/* iteration it was first seen in */
	int32_t first;		/* step of first acquisition (its name) */
	int32_t pname;		/* its name in the last iteration, -1 */
	int32_t ppos;		/* last iteration's step matching its latest
				 * acquisition, -1 */
	uint32_t flags;
	uint64_t bytes;		/* PF_INFLIGHT: what its reload moves */
	uint32_t ev_gen;	/* iteration the two below belong to */
	uint32_t comebacks;	/* times acquired again after an eviction */
	bool evicted;		/* evicted, not acquired since */
};

struct step {
	int32_t name;		/* first step of the tensor acquired */
	uint64_t at;		/* ns since the iteration began */
	size_t bytes;		/* its size: tells first acquisitions apart */
	uint64_t work;		/* compute of the program's ops before it */
	bool replay;		/* by a regeneration: a use to prefetch
				 * for, not one of the program's */
	int32_t pname;		/* a first acquisition's tensor's name in
				 * the record before, -1 */
	/* what the planner reads (struct tp_record_step) */
	bool in_op, born;
	uint32_t op;
	unsigned flags;
	size_t pages;
};

/* The program's ops of one iteration (struct tp_record_op), and names. */
struct op_log {
	struct tp_record_op *ops;
	size_t n, cap;
	int32_t *io;
	size_t n_io, cap_io;
};

struct tp_prefetch {
	pthread_mutex_t lock;	/* done() comes from completion threads */
	struct pf_ent *tab;	/* open addressing, linear probing */
	size_t tab_cap, tab_n;
	uint32_t gen;
	bool active;
	uint64_t t0;
	struct step *cur;
	size_t cur_n, cur_cap;
	struct step *prev;
	size_t prev_n, prev_cap;
	int32_t *prev_next;	/* next step using the same tensor, -1 */
	size_t next_cap;
	/*
	 * By name: iterations, up to TP_PREFETCH_REGEN_MEMORY, since one
	 * in which a regeneration acquired the tensor after the program's
	 * last use (0: none that recent). A tensor made from it left and
	 * came back through it: "not used again" is not free to leave.
	 */
	uint8_t *prev_late;
	bool thrashed;		/* this iteration (tp_prefetch_thrashed()) */
	/* This iteration's tensor for each name of the last one. */
	struct tp_tensor **by_pname;
	size_t by_pname_cap;
	size_t pos;		/* the last iteration's step expected next */
	struct pf_ent *cand;	/* an acquisition matched past pos, */
	size_t cand_pos;	/* at this step: to be confirmed */
	uint64_t prev_len_ns;
	uint32_t rec_gen;	/* the iteration recorded in prev */
	unsigned in_flight;
	uint64_t in_flight_bytes;
	struct tp_prefetch_stats st;
	/* The ops of this iteration and of the recorded one. */
	struct op_log ops_cur, ops_prev;
	uint32_t op_n;		/* ops of this iteration ended so far */
	bool op_open;		/* between tp_prefetch_op_begin and _end */
	struct tp_op_split op_cut;	/* of the open op */
	bool prev_followed;	/* the recorded iteration followed one */
	/*
	 * This iteration's prefetches used and wasted; past
	 * TP_PREFETCH_WASTE_MIN wasted and more wasted than used, it
	 * prefetches no more (halted) until the next.
	 */
	uint64_t it_used, it_wasted;
	bool halted;
};

/* A prefetch left unused: the iteration may stop prefetching. */
static void wasted(struct tp_prefetch *pf)
{
	pf->st.wasted++;
	pf->it_wasted++;
	if (pf->it_wasted >= TP_PREFETCH_WASTE_MIN &&
	    pf->it_wasted > pf->it_used && !pf->halted) {
		pf->halted = true;
		pf->st.halted++;
	}
}

static size_t hash_id(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct pf_ent *lookup(struct tp_prefetch *pf, uint64_t id)
{
	size_t i = hash_id(id, pf->tab_cap);

	while (pf->tab[i].flags & PF_USED) {
		if (pf->tab[i].id == id)
			return &pf->tab[i];
		i = (i + 1) & (pf->tab_cap - 1);
	}
	return NULL;
}

static int rehash(struct tp_prefetch *pf, size_t cap)
{
	struct pf_ent *old = pf->tab, *tab = calloc(cap, sizeof(*tab));
	size_t old_cap = pf->tab_cap;

	if (!tab)
		return -ENOMEM;
	pf->cand = NULL;	/* entries move: forget the pointer */
	pf->tab = tab;
	pf->tab_cap = cap;
	for (size_t j = 0; j < old_cap; j++) {
		size_t i;

		if (!(old[j].flags & PF_USED))
			continue;
		i = hash_id(old[j].id, cap);
		while (tab[i].flags & PF_USED)
			i = (i + 1) & (cap - 1);
		tab[i] = old[j];
	}
	free(old);
	return 0;
}

static struct pf_ent *insert(struct tp_prefetch *pf, struct tp_tensor *t)
{
	struct pf_ent *e = lookup(pf, t->id);
	size_t i;

	if (e)
		return e;
	if ((pf->tab_n + 1) * 2 > pf->tab_cap &&
	    rehash(pf, pf->tab_cap * 2))
		return NULL;
	i = hash_id(t->id, pf->tab_cap);
	while (pf->tab[i].flags & PF_USED)
		i = (i + 1) & (pf->tab_cap - 1);
	e = &pf->tab[i];
	*e = (struct pf_ent){ .id = t->id, .t = t, .gen = pf->gen - 1,
			      .born = pf->gen,
			      .first = -1, .pname = -1, .ppos = -1,
			      .flags = PF_USED };
	pf->tab_n++;
	return e;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void erase(struct tp_prefetch *pf, struct pf_ent *e)
{
	pf->cand = NULL;	/* entries move: forget the pointer */
	size_t mask = pf->tab_cap - 1, i = (size_t)(e - pf->tab), j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & mask;
		if (!(pf->tab[j].flags & PF_USED))
			break;
		h = hash_id(pf->tab[j].id, pf->tab_cap);
		/* Move j into the hole at i unless its home lies in (i, j]. */
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			pf->tab[i] = pf->tab[j];
			i = j;
		}
	}
	pf->tab[i].flags = 0;
	pf->tab_n--;
}

struct tp_prefetch *tp_prefetch_create(void)
{
	struct tp_prefetch *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->tab_cap = 256;
	pf->tab = calloc(pf->tab_cap, sizeof(*pf->tab));
	if (!pf->tab) {
		free(pf);
		errno = ENOMEM;
		return NULL;
	}
	pf->gen = 1;
	pthread_mutex_init(&pf->lock, NULL);
	return pf;
}

void tp_prefetch_destroy(struct tp_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_destroy(&pf->lock);
	free(pf->tab);
	free(pf->cur);
	free(pf->by_pname);
	free(pf->prev);
	free(pf->prev_next);
	free(pf->prev_late);
	free(pf->ops_cur.ops);
	free(pf->ops_cur.io);
	free(pf->ops_prev.ops);
	free(pf->ops_prev.io);
	free(pf);
}

void tp_prefetch_iteration_begin(struct tp_prefetch *pf, uint64_t now)
{
	if (pf->active)
		tp_prefetch_iteration_end(pf, now);
	pthread_mutex_lock(&pf->lock);
	if (pf->prev_n) {
		struct tp_tensor **m = tp_array_grow(pf->by_pname,
						     &pf->by_pname_cap,
						     pf->prev_n, sizeof(*m),
						     pf->prev_n);

		if (m)
			pf->by_pname = m;
		else
			pf->prev_n = 0;	/* predict nothing this time */
	}
	if (pf->prev_n)
		memset(pf->by_pname, 0, pf->prev_n * sizeof(*pf->by_pname));
	/*
	 * Tensors that outlive an iteration (parameters, optimizer state)
	 * are predicted to be acquired again where they were first acquired
	 * in the record, so that their first use can be prefetched too; an
	 * acquisition that turns out otherwise takes the slot back (below).
	 */
	if (pf->rec_gen == pf->gen) {
		for (size_t i = 0; i < pf->tab_cap; i++) {
			struct pf_ent *e = &pf->tab[i];

			if ((e->flags & PF_USED) && e->gen == pf->gen &&
			    e->first >= 0 && (size_t)e->first < pf->prev_n)
				pf->by_pname[e->first] = e->t;
		}
	}
	pf->gen++;
	pf->cur_n = 0;
	pf->ops_cur.n = 0;
	pf->ops_cur.n_io = 0;
	pf->op_n = 0;
	pf->op_open = false;
	pf->pos = 0;
	pf->cand = NULL;
	pf->t0 = now;
	pf->active = true;
	pf->it_used = pf->it_wasted = 0;
	pf->halted = false;
	pthread_mutex_unlock(&pf->lock);
}

void tp_prefetch_iteration_end(struct tp_prefetch *pf, uint64_t now)
{
	size_t n, cap, old_n;
	struct op_log ops;
	int32_t *seen;
	uint8_t *late;
	struct step *s;
	bool learn;

	pthread_mutex_lock(&pf->lock);
	if (!pf->active)
		goto out;
	n = pf->cur_n;
	old_n = pf->prev_n;
	/*
	 * It followed a record, so its regenerations came of the policy's
	 * predictions, and they cost more than its compute (DTR's thrash
	 * rule): what it sent away as not used again was not free.
	 */
	learn = pf->prev_n && pf->rec_gen + 1 == pf->gen && pf->thrashed;
	pf->active = false;
	if (n) {
		int32_t *next = tp_array_grow(pf->prev_next, &pf->next_cap, n,
					      sizeof(*next), n);

		if (!next)
			goto out;	/* keep the old prediction */
		pf->prev_next = next;
	}
	seen = malloc((n ? n : 1) * sizeof(*seen));
	late = malloc(n ? n : 1);
	if (!seen || !late) {
		free(seen);
		free(late);
		goto out;
	}
	pf->prev_followed = pf->prev_n && pf->rec_gen + 1 == pf->gen;
	/* The recorded iteration becomes the prediction: swap buffers. */
	ops = pf->ops_prev;
	pf->ops_prev = pf->ops_cur;
	pf->ops_cur = ops;
	s = pf->prev;
	pf->prev = pf->cur;
	pf->cur = s;
	cap = pf->prev_cap;
	pf->prev_cap = pf->cur_cap;
	pf->cur_cap = cap;
	pf->cur_n = 0;
	pf->prev_n = n;
	pf->rec_gen = pf->gen;
	pf->prev_len_ns = now > pf->t0 ? now - pf->t0 : 0;
	for (size_t i = 0; i < n; i++) {
		int32_t p = pf->prev[i].pname;

		seen[i] = -1;
		/* what the record before knew of the same tensor, aged */
		late[i] = p >= 0 && (size_t)p < old_n && pf->prev_late &&
			  pf->prev_late[p] ? pf->prev_late[p] - 1 : 0;
	}
	for (size_t i = n; i-- > 0;) {
		int32_t name = pf->prev[i].name;

		pf->prev_next[i] = seen[name];
		if (!pf->prev[i].replay)
			seen[name] = (int32_t)i;
		else if (seen[name] < 0 && learn)	/* past its last use */
			late[name] = TP_PREFETCH_REGEN_MEMORY;
	}
	free(seen);
	free(pf->prev_late);
	pf->prev_late = late;
	/* Forget tensors not seen this iteration that owe nothing. */
	for (size_t i = 0; i < pf->tab_cap; i++) {
		struct pf_ent *e = &pf->tab[i];

		if ((e->flags & PF_USED) && e->gen != pf->gen &&
		    !(e->flags & (PF_INFLIGHT | PF_UNUSED))) {
			erase(pf, e);
			i--;	/* a later entry may have shifted into i */
		}
	}
out:
	pthread_mutex_unlock(&pf->lock);
}

bool tp_prefetch_predicting(struct tp_prefetch *pf)
{
	bool yes;

	pthread_mutex_lock(&pf->lock);
	yes = pf->active && pf->prev_n && pf->rec_gen + 1 == pf->gen;
	pthread_mutex_unlock(&pf->lock);
	return yes;
}

/*
 * The record's name @e's tensor was predicted under, when it has not been
 * acquired yet in this iteration; -1 otherwise.
 */
static int32_t predicted_name(const struct tp_prefetch *pf,
			      const struct pf_ent *e)
{
	if (e->gen + 1 != pf->gen || pf->rec_gen + 1 != pf->gen ||
	    e->first < 0 || (size_t)e->first >= pf->prev_n ||
	    pf->by_pname[e->first] != e->t)
		return -1;
	return e->first;
}

/*
 * The record's step of @e's next use from the cursor on: -1 when not
 * known, INT32_MAX when not again in this iteration.
 */
static int64_t next_step(const struct tp_prefetch *pf, const struct pf_ent *e)
{
	int32_t next;

	if (!pf->active)
		return -1;
	if (e->gen == pf->gen) {
		if (e->ppos < 0)
			return -1;
		/* past uses of the record this iteration skipped */
		next = pf->prev_next[e->ppos];
		while (next >= 0 && (size_t)next < pf->pos)
			next = pf->prev_next[next];
		return next < 0 ? INT32_MAX : next;
	}
	next = predicted_name(pf, e);
	return next >= 0 && (size_t)next >= pf->pos ? next : -1;
}

/* Room for step @k in the current recording. */
static int reserve_step(struct tp_prefetch *pf, size_t k)
{
	struct step *cur;

	if (k >= INT32_MAX)
		return -ENOMEM;
	cur = tp_array_grow(pf->cur, &pf->cur_cap, k + 1, sizeof(*cur), 1024);
	if (!cur)
		return -ENOMEM;
	pf->cur = cur;
	return 0;
}

/*
 * Whether the record's name @j is free for @t: no tensor of this
 * iteration took it (a tensor from before may be predicted to).
 */
static bool slot_free(struct tp_prefetch *pf, size_t j,
		      const struct tp_tensor *t)
{
	const struct tp_tensor *held = pf->by_pname[j];
	const struct pf_ent *h;

	if (!held || held == t)
		return true;
	h = lookup(pf, held->id);
	return !h || h->gen != pf->gen;
}

/* Whether @e's tensor can be the record's step @j. */
static bool matches(struct tp_prefetch *pf, const struct pf_ent *e, size_t j)
{
	int32_t name = pf->prev[j].name;

	if (pf->prev[j].replay)
		return false;
	if (e->pname >= 0)
		return name == e->pname;
	/* first seen: a first acquisition of that size no tensor took */
	return name == (int32_t)j && pf->prev[j].bytes == e->t->bytes &&
	       slot_free(pf, j, e->t);
}

/* The record's first step from @j on that the program made itself. */
static size_t program_step(const struct tp_prefetch *pf, size_t j)
{
	while (j < pf->prev_n && pf->prev[j].replay)
		j++;
	return j;
}

static void take(struct tp_prefetch *pf, struct pf_ent *e, size_t j)
{
	if (e->pname < 0) {
		e->pname = (int32_t)j;
		pf->by_pname[j] = e->t;
	}
	e->ppos = (int32_t)j;
	pf->pos = j + 1;
	pf->st.predicted++;
}

/*
 * Match the acquisition of @e's tensor to the last iteration's record.
 * The record is followed with a cursor (pos), not by step number, so
 * acquisitions the last iteration did not make (new tensors) do not shift
 * every later prediction: an acquisition that
 * does not match at the cursor leaves it where it is. When this iteration
 * skips steps of the record, an acquisition found a little further on
 * (TP_PREFETCH_RESYNC) is only a candidate; the cursor moves there when
 * the next acquisition confirms it, since a replay that happens to match
 * one later step rarely matches two in a row.
 */
static void align(struct tp_prefetch *pf, struct pf_ent *e)
{
	size_t at = program_step(pf, pf->pos), seen = 0, j;
	struct pf_ent *cand = pf->cand;

	pf->cand = NULL;
	if (at < pf->prev_n && matches(pf, e, at)) {
		take(pf, e, at);
		return;
	}
	j = cand ? program_step(pf, pf->cand_pos + 1) : pf->prev_n;
	if (j < pf->prev_n && matches(pf, e, j)) {
		/* confirmed: the candidate is the record's step cand_pos */
		if (cand->gen == pf->gen && cand->t &&
		    (cand->pname >= 0 || slot_free(pf, pf->cand_pos, cand->t)))
			take(pf, cand, pf->cand_pos);
		take(pf, e, j);
		return;
	}
	/* the window counts the program's steps, not the replays' */
	for (j = at + 1; j < pf->prev_n && seen + 1 < TP_PREFETCH_RESYNC;
	     j++) {
		if (pf->prev[j].replay)
			continue;
		seen++;
		if (matches(pf, e, j)) {
			pf->cand = e;
			pf->cand_pos = j;
			return;
		}
	}
}

int tp_prefetch_on_acquire(struct tp_prefetch *pf, struct tp_tensor *t,
			   uint64_t now, uint64_t work, bool replay)
{
	struct pf_ent *e;
	size_t k;
	int rc = 0;

	pthread_mutex_lock(&pf->lock);
	e = insert(pf, t);
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	e->t = t;
	e->flags &= ~PF_REFUSED;
	/* Back after an eviction in this iteration: a regeneration. */
	if (e->evicted && e->ev_gen == pf->gen && e->comebacks < UINT32_MAX)
		e->comebacks++;
	e->evicted = false;
	if (e->flags & PF_UNUSED) {
		if (e->flags & PF_INFLIGHT)
			pf->st.late++;
		else
			pf->st.hits++;
		pf->it_used++;
		e->flags &= ~PF_UNUSED;
	}
	/*
	 * A regeneration's acquisitions depend on what this iteration
	 * evicted. They are recorded as uses to prefetch for, since the
	 * next iteration may replay the same, but never matched by the
	 * cursor nor chained as a tensor's next use: a long replay chain
	 * in the record would otherwise hold the cursor where the next
	 * iteration, replaying something else, never matches. A tensor the
	 * program has not named in this iteration has no name to record.
	 */
	if (!pf->active || (replay && e->gen != pf->gen))
		goto out;
	k = pf->cur_n;
	if (reserve_step(pf, k)) {
		rc = -ENOMEM;
		goto out;
	}
	if (e->gen != pf->gen) {
		int32_t slot = predicted_name(pf, e);

		/* matched below like any first acquisition */
		if (slot >= 0)
			pf->by_pname[slot] = NULL;
		e->gen = pf->gen;
		e->first = (int32_t)k;
		e->pname = -1;
		e->ppos = -1;
	}
	pf->cur[k].name = e->first;
	pf->cur[k].pname = -1;
	pf->cur[k].at = now > pf->t0 ? now - pf->t0 : 0;
	pf->cur[k].bytes = t->bytes;
	pf->cur[k].work = work;
	pf->cur[k].replay = replay;
	pf->cur[k].in_op = pf->op_open;
	pf->cur[k].op = pf->op_n;
	pf->cur[k].born = e->born == pf->gen;
	pf->cur[k].flags = t->flags;
	pf->cur[k].pages = t->nr_pages;
	pf->cur_n++;
	if (replay)
		goto out;
	pf->st.recorded++;
	align(pf, e);
	pf->cur[e->first].pname = e->pname;
out:
	pthread_mutex_unlock(&pf->lock);
	return rc;
}

/* tp_prefetch_next_use_ns() with pf->lock held. */
/* The ns to the record's step @next (next_step()) as next_use_ns says. */
static uint64_t next_use_from(const struct tp_prefetch *pf, int64_t next)
{
	uint64_t ref;

	if (next < 0)
		return 0;	/* not matched to the last iteration */
	if (next == INT32_MAX)
		return UINT64_MAX;
	/* The record's time from where we are to the next use: this
	 * iteration may run slower (replays), but what lies between is the
	 * same compute. */
	ref = pf->pos ? pf->prev[pf->pos - 1].at : 0;
	/* 1, not 0 (unknown): a use in the op under way is known, and now */
	return pf->prev[next].at > ref ? pf->prev[next].at - ref : 1;
}

/* tp_prefetch_next_use_ns() with pf->lock held. */
static uint64_t next_use_locked(struct tp_prefetch *pf,
				const struct tp_tensor *t)
{
	struct pf_ent *e = lookup(pf, t->id);

	return next_use_from(pf, e ? next_step(pf, e) : -1);
}

/*
 * The record's time from the cursor to the next acquisition that comes
 * later (the op about to run): a prefetch not issued now is issued no
 * sooner than that.
 */
static uint64_t until_next_step(const struct tp_prefetch *pf)
{
	uint64_t ref = pf->pos ? pf->prev[pf->pos - 1].at : 0;

	for (size_t j = pf->pos; j < pf->prev_n; j++)
		if (pf->prev[j].at > ref)
			return pf->prev[j].at - ref;
	return 0;
}

/* Stop counting @e in flight. */
static void landed(struct tp_prefetch *pf, struct pf_ent *e)
{
	e->flags &= ~PF_INFLIGHT;
	pf->in_flight--;
	pf->in_flight_bytes -= e->bytes;
	e->bytes = 0;
}

size_t tp_prefetch_pick(struct tp_prefetch *pf, struct tp_tensor **out,
			size_t max, unsigned depth,
			const struct tp_prefetch_room *room,
			bool (*want)(void *priv, struct tp_tensor *t,
				     uint64_t next_use_ns),
			void *priv)
{
	uint64_t queued, step_ns;
	size_t n = 0, k, end;

	pthread_mutex_lock(&pf->lock);
	queued = pf->in_flight_bytes;
	if (!pf->active || pf->halted || pf->in_flight >= depth)
		goto out;
	if (max > depth - pf->in_flight)
		max = depth - pf->in_flight;
	k = pf->pos;
	step_ns = until_next_step(pf);
	end = k + TP_PREFETCH_HORIZON < pf->prev_n ?
	      k + TP_PREFETCH_HORIZON : pf->prev_n;
	for (size_t j = k; j < end && n < max; j++) {
		struct tp_tensor *t = pf->by_pname[pf->prev[j].name];
		uint64_t need, next;
		struct pf_ent *e;
		double lead;

		/* NULL: not created yet in this iteration, or freed. Only
		 * pages in host swap come back by copy: evicted ones are
		 * regenerated at use. */
		if (!t || t->pins ||
		    t->resident_pages + tp_pager_evicted_pages(t) >= t->nr_pages)
			continue;
		e = lookup(pf, t->id);
		if (!e || (e->flags & (PF_INFLIGHT | PF_REFUSED)))
			continue;
		next = pf->prev[j].replay ? next_use_from(pf, (int64_t)j) :
					    next_use_locked(pf, t);
		if (!next || (want && !want(priv, t, next)))
			continue;	/* not known, or cheaper recomputed */
		need = (uint64_t)(t->nr_pages - t->resident_pages -
				  tp_pager_evicted_pages(t)) * room->chunk;
		lead = (double)(queued + need) / room->bytes_per_ns +
		       (room->remap_ns ?
			room->remap_ns(room->remap_priv, need / room->chunk) :
			0);
		/* Not due yet, even at the next acquisition: neither is any
		 * later one. Earlier, it would only take room the work
		 * before its use needs. */
		if (next > TP_PREFETCH_DUE_SLACK * lead + step_ns)
			break;
		queued += need;
		e->flags |= PF_INFLIGHT | PF_UNUSED;
		e->bytes = need;
		pf->in_flight++;
		pf->in_flight_bytes += need;
		pf->st.issued++;
		out[n++] = t;
	}
out:
	pthread_mutex_unlock(&pf->lock);
	return n;
}

void tp_prefetch_done(struct tp_prefetch *pf, struct tp_tensor *t, bool ok)
{
	struct pf_ent *e;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (e && (e->flags & PF_INFLIGHT)) {
		landed(pf, e);
		if (!ok) {
			/* not issued (no room now): may be asked again */
			e->flags &= ~PF_UNUSED;
			pf->st.issued--;
		} else if (t->resident_pages < t->nr_pages) {
			/*
			 * "Done" but not back: its pages were not in host
			 * swap (evicted). Not a prefetch, and asking again at
			 * every acquire would only get the same answer.
			 */
			e->flags &= ~PF_UNUSED;
			e->flags |= PF_REFUSED;
			pf->st.issued--;
		}
	}
	pthread_mutex_unlock(&pf->lock);
}

void tp_prefetch_left(struct tp_prefetch *pf, struct tp_tensor *t)
{
	struct pf_ent *e;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (e)
		e->flags &= ~PF_REFUSED;	/* it may be in host swap now */
	if (e && (e->flags & PF_UNUSED)) {
		e->flags &= ~PF_UNUSED;
		wasted(pf);
	}
	pthread_mutex_unlock(&pf->lock);
}

void tp_prefetch_forget(struct tp_prefetch *pf, struct tp_tensor *t)
{
	struct pf_ent *e;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (e) {
		int32_t slot = predicted_name(pf, e);

		if (slot >= 0)
			pf->by_pname[slot] = NULL;
		if (e->gen == pf->gen && e->pname >= 0 &&
		    pf->by_pname[e->pname] == t)
			pf->by_pname[e->pname] = NULL;
		if (e->flags & PF_INFLIGHT)
			landed(pf, e);
		if (e->flags & PF_UNUSED)
			wasted(pf);
		erase(pf, e);
	}
	pthread_mutex_unlock(&pf->lock);
}

bool tp_prefetch_used_after(struct tp_prefetch *pf, const struct tp_tensor *v,
			    const struct tp_tensor *t)
{
	const struct pf_ent *ev, *et;
	int64_t nv = -1, nt = -1;

	pthread_mutex_lock(&pf->lock);
	ev = lookup(pf, v->id);
	et = lookup(pf, t->id);
	if (ev && et) {
		nv = next_step(pf, ev);
		nt = next_step(pf, et);
	}
	pthread_mutex_unlock(&pf->lock);
	return nv >= 0 && nt >= 0 && nv > nt;
}

uint64_t tp_prefetch_next_use_ns(struct tp_prefetch *pf,
				 const struct tp_tensor *t)
{
	uint64_t ns;

	pthread_mutex_lock(&pf->lock);
	ns = next_use_locked(pf, t);
	pthread_mutex_unlock(&pf->lock);
	return ns;
}

/*
 * Step @j's time for reuse distances: the program's compute before it
 * when the record has that clock (a pager counts it), else its time.
 */
static uint64_t reuse_clock(const struct tp_prefetch *pf, size_t j)
{
	bool work = pf->prev[pf->prev_n - 1].work > pf->prev[0].work;

	return work ? pf->prev[j].work : pf->prev[j].at;
}

/* The reuse distance of @e (next_step() @next) as tp_prefetch_uses(). */
static uint64_t reuse_from(const struct tp_prefetch *pf,
			   const struct pf_ent *e, int64_t next)
{
	uint64_t ref, first, last, left;

	if (next < 0)
		return 0;
	/* The program's compute between the steps, which paging in the
	 * recorded iteration did not stretch. A known step means a record. */
	ref = reuse_clock(pf, pf->pos ? pf->pos - 1 : 0);
	if (next != INT32_MAX) {
		uint64_t at = reuse_clock(pf, (size_t)next);

		return at > ref ? at - ref : 1;
	}
	if (e->born == pf->gen)
		return UINT64_MAX;	/* made in this iteration: done with */
	first = reuse_clock(pf, 0);
	last = reuse_clock(pf, pf->prev_n - 1);
	left = last > ref ? last - ref : 0;
	/* e->pname: the record's step of its first use */
	return 1 + left + (e->gen == pf->gen && e->pname >= 0 ?
			   reuse_clock(pf, (size_t)e->pname) - first :
			   last - first);
}

void tp_prefetch_uses(struct tp_prefetch *pf, const struct tp_tensor *t,
		      uint64_t *next_ns, uint64_t *reuse_ns)
{
	const struct pf_ent *e;
	int64_t next;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	next = e ? next_step(pf, e) : -1;
	*next_ns = next_use_from(pf, next);
	*reuse_ns = reuse_from(pf, e, next);
	pthread_mutex_unlock(&pf->lock);
}

void tp_prefetch_thrashed(struct tp_prefetch *pf, bool yes)
{
	pthread_mutex_lock(&pf->lock);
	pf->thrashed = yes;
	pthread_mutex_unlock(&pf->lock);
}

bool tp_prefetch_regen_late(struct tp_prefetch *pf, const struct tp_tensor *t)
{
	const struct pf_ent *e;
	bool late;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	late = e && e->gen == pf->gen && e->pname >= 0 &&
	       (size_t)e->pname < pf->prev_n && pf->prev_late &&
	       pf->prev_late[e->pname];
	pthread_mutex_unlock(&pf->lock);
	return late;
}

unsigned tp_prefetch_evictions(struct tp_prefetch *pf,
			       const struct tp_tensor *t)
{
	const struct pf_ent *e;
	unsigned n = 0;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (e && e->ev_gen == pf->gen)
		n = e->comebacks;
	pthread_mutex_unlock(&pf->lock);
	return n;
}

void tp_prefetch_note_evicted(struct tp_prefetch *pf, struct tp_tensor *t)
{
	struct pf_ent *e;

	pthread_mutex_lock(&pf->lock);
	e = insert(pf, t);
	if (e) {
		if (e->ev_gen != pf->gen) {
			e->ev_gen = pf->gen;
			e->comebacks = 0;
		}
		e->evicted = true;
	}
	pthread_mutex_unlock(&pf->lock);
}

int64_t tp_prefetch_next_step(struct tp_prefetch *pf,
			      const struct tp_tensor *t)
{
	const struct pf_ent *e;
	int64_t next;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	next = e ? next_step(pf, e) : -1;
	pthread_mutex_unlock(&pf->lock);
	return next;
}

int64_t tp_prefetch_last_step(struct tp_prefetch *pf,
			      const struct tp_tensor *y)
{
	const struct pf_ent *e;
	int64_t last = -1;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, y->id);
	if (!e || e->born != pf->gen)
		goto out;
	last = next_step(pf, e);
	if (last == INT32_MAX) {
		last = INT32_MIN;
		goto out;
	}
	/* its last use: the end of the record's chain */
	while (last >= 0 && pf->prev_next[last] >= 0)
		last = pf->prev_next[last];
out:
	pthread_mutex_unlock(&pf->lock);
	return last;
}

uint64_t tp_prefetch_stamp(struct tp_prefetch *pf)
{
	uint64_t s;

	pthread_mutex_lock(&pf->lock);
	s = ((uint64_t)pf->gen << 32) ^ (uint64_t)pf->pos ^
	    ((uint64_t)pf->rec_gen << 48);
	pthread_mutex_unlock(&pf->lock);
	return s + 1;	/* never 0: a tensor's stamp starts at 0 */
}

bool tp_prefetch_in_flight(struct tp_prefetch *pf, const struct tp_tensor *t)
{
	struct pf_ent *e;
	bool r;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	r = e && (e->flags & PF_INFLIGHT);
	pthread_mutex_unlock(&pf->lock);
	return r;
}

void tp_prefetch_get_stats(struct tp_prefetch *pf,
			   struct tp_prefetch_stats *st)
{
	pthread_mutex_lock(&pf->lock);
	*st = pf->st;
	pthread_mutex_unlock(&pf->lock);
}

/* --- the program's ops, for the planner ------------------------------ */

void tp_prefetch_op_begin(struct tp_prefetch *pf, const struct tp_op_split *cut)
{
	pthread_mutex_lock(&pf->lock);
	if (pf->active) {
		/* an op that failed before its end is dropped here */
		pf->op_open = true;
		pf->op_cut = cut ? *cut : (struct tp_op_split){ 0 };
	}
	pthread_mutex_unlock(&pf->lock);
}

/* This iteration's name of @t, -1 when it has none. */
static int32_t cur_name(struct tp_prefetch *pf, const struct tp_tensor *t)
{
	const struct pf_ent *e = lookup(pf, t->id);

	return e && e->gen == pf->gen ? e->first : -1;
}

int tp_prefetch_op_end(struct tp_prefetch *pf, struct tp_tensor *const *in,
		       unsigned n_in, struct tp_tensor *const *out,
		       unsigned n_out, uint64_t ns, uint64_t out_regen)
{
	struct op_log *l = &pf->ops_cur;
	struct tp_record_op *ops;
	int32_t *io;
	size_t need;
	int rc = 0;

	pthread_mutex_lock(&pf->lock);
	if (!pf->active || !pf->op_open)
		goto out;
	pf->op_open = false;
	need = l->n_io + n_in + n_out;
	ops = tp_array_grow(l->ops, &l->cap, l->n + 1, sizeof(*ops), 256);
	if (!ops) {
		rc = -ENOMEM;
		goto out;
	}
	l->ops = ops;
	if (need) {
		io = tp_array_grow(l->io, &l->cap_io, need, sizeof(*io), 1024);
		if (!io) {
			rc = -ENOMEM;
			goto out;
		}
		l->io = io;
	}
	l->ops[l->n] = (struct tp_record_op){
		.io = (uint32_t)l->n_io, .n_in = n_in, .n_out = n_out,
		.ns = ns, .cut = pf->op_cut, .out_regen = out_regen,
	};
	for (unsigned k = 0; k < n_in; k++)
		l->io[l->n_io++] = cur_name(pf, in[k]);
	for (unsigned k = 0; k < n_out; k++)
		l->io[l->n_io++] = cur_name(pf, out[k]);
	l->n++;
	pf->op_n++;
out:
	pthread_mutex_unlock(&pf->lock);
	return rc;
}

uint32_t tp_prefetch_op_index(struct tp_prefetch *pf)
{
	uint32_t n;

	pthread_mutex_lock(&pf->lock);
	n = pf->op_n;
	pthread_mutex_unlock(&pf->lock);
	return n;
}

int tp_prefetch_record(struct tp_prefetch *pf, struct tp_record *r)
{
	int rc = 0;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&pf->lock);
	r->n_steps = pf->prev_n;
	r->n_ops = pf->ops_prev.n;
	r->n_io = pf->ops_prev.n_io;
	r->followed = pf->prev_followed;
	r->steps = calloc(r->n_steps + 1, sizeof(*r->steps));
	r->ops = calloc(r->n_ops + 1, sizeof(*r->ops));
	r->io = calloc(r->n_io + 1, sizeof(*r->io));
	if (!r->steps || !r->ops || !r->io) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n_steps; i++) {
		const struct step *s = &pf->prev[i];

		r->steps[i] = (struct tp_record_step){
			.name = s->name, .op = s->op, .in_op = s->in_op,
			.replay = s->replay, .born = s->born,
			.flags = s->flags, .bytes = s->bytes,
			.pages = s->pages,
		};
	}
	if (r->n_ops)
		memcpy(r->ops, pf->ops_prev.ops, r->n_ops * sizeof(*r->ops));
	if (r->n_io)
		memcpy(r->io, pf->ops_prev.io, r->n_io * sizeof(*r->io));
out:
	pthread_mutex_unlock(&pf->lock);
	if (rc)
		tp_record_free(r);
	return rc;
}

void tp_record_free(struct tp_record *r)
{
	free(r->steps);
	free(r->ops);
	free(r->io);
	memset(r, 0, sizeof(*r));
}

int32_t tp_prefetch_name(struct tp_prefetch *pf, const struct tp_tensor *t)
{
	const struct pf_ent *e;
	int32_t name = -1;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (e && pf->active && pf->rec_gen + 1 == pf->gen)
		name = e->gen == pf->gen ? e->pname : predicted_name(pf, e);
	pthread_mutex_unlock(&pf->lock);
	return name;
}

bool tp_prefetch_seen(struct tp_prefetch *pf, const struct tp_tensor *t)
{
	const struct pf_ent *e;
	bool seen;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	seen = e && pf->active && pf->rec_gen + 1 == pf->gen &&
	       e->gen == pf->gen;
	pthread_mutex_unlock(&pf->lock);
	return seen;
}

struct tp_tensor *tp_prefetch_named(struct tp_prefetch *pf, int32_t name)
{
	struct tp_tensor *t = NULL;

	pthread_mutex_lock(&pf->lock);
	if (pf->active && pf->rec_gen + 1 == pf->gen && name >= 0 &&
	    (size_t)name < pf->prev_n)
		t = pf->by_pname[name];
	pthread_mutex_unlock(&pf->lock);
	return t;
}

bool tp_prefetch_bind(struct tp_prefetch *pf, struct tp_tensor *t,
		      int32_t name)
{
	struct pf_ent *e;
	bool ok = false;

	pthread_mutex_lock(&pf->lock);
	e = lookup(pf, t->id);
	if (!e || !pf->active || pf->rec_gen + 1 != pf->gen || name < 0 ||
	    (size_t)name >= pf->prev_n || pf->prev[name].name != name ||
	    pf->prev[name].bytes != t->bytes)
		goto out;
	if (e->gen == pf->gen && e->pname >= 0) {
		ok = e->pname == name;
		goto out;
	}
	if (e->gen != pf->gen || !slot_free(pf, (size_t)name, t))
		goto out;
	e->pname = name;
	if (e->ppos < 0)
		e->ppos = name;
	pf->by_pname[name] = t;
	ok = true;
out:
	pthread_mutex_unlock(&pf->lock);
	return ok;
}
