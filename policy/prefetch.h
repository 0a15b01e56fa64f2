/* SPDX-License-Identifier: MIT */
/*
 * The prefetcher (DELTA Alg. 4 driven by the last iteration's order).
 *
 * Between tp_iteration_begin and tp_iteration_end every acquisition is
 * recorded by position. Tensors are new every iteration (activations), so
 * a tensor is named by the step of its first acquisition in its iteration:
 * step j of the last iteration that used "the tensor first seen at step c"
 * predicts that this iteration's counterpart of that tensor is used at
 * about step j again. A cursor follows the record as acquisitions match
 * it (see align() in prefetch.c); the record's steps after the cursor
 * give the tensors to bring back, in order of use.
 */
#ifndef TP_POLICY_PREFETCH_H
#define TP_POLICY_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pager/tensor.h"
#include "tpager.h"

struct tp_prefetch;

/* How far ahead of the current step predictions are looked for. */
#define TP_PREFETCH_HORIZON 256
/* How far ahead an acquisition is looked for in the record to resync. */
#define TP_PREFETCH_RESYNC 16

struct tp_prefetch_stats {
	uint64_t issued;	/* prefetches handed to the pager */
	uint64_t hits;		/* resident when acquired */
	uint64_t late;		/* still in flight when acquired */
	uint64_t wasted;	/* left again before being acquired */
	uint64_t halted;	/* iterations it stopped prefetching in:
				 * more wasted than used */
	uint64_t predicted;	/* acquisitions the last iteration predicted */
	uint64_t recorded;	/* acquisitions recorded in iterations */
};

/*
 * Prefetches an iteration may waste before the rest of it goes without,
 * once more are wasted than used: a record that no longer holds (the
 * iteration before ran otherwise, as a cold first one does) brings back
 * what then leaves unused, and each such copy takes the room of what is
 * needed sooner (tp_prefetch_stats.halted).
 */
#define TP_PREFETCH_WASTE_MIN	8

/*
 * Iterations a tensor that a regeneration acquired after the program's
 * last use stays not free to leave (tp_prefetch_regen_late()). Only an
 * iteration that sends it away for nothing can show the need has gone,
 * at the price of the thrash it was kept from: long.
 */
#define TP_PREFETCH_REGEN_MEMORY	64

struct tp_prefetch *tp_prefetch_create(void);
void tp_prefetch_destroy(struct tp_prefetch *pf);

/* Iteration marks. A begin without an end ends the open iteration. */
void tp_prefetch_iteration_begin(struct tp_prefetch *pf, uint64_t now);
void tp_prefetch_iteration_end(struct tp_prefetch *pf, uint64_t now);

/* Whether the open iteration follows a record it can prefetch from. */
bool tp_prefetch_predicting(struct tp_prefetch *pf);

/**
 * tp_prefetch_on_acquire() - @t is being acquired at @now, after @work ns
 * of the program's own compute: count a hit or a late prefetch, and
 * record it. With @replay (an acquisition by a regeneration, which the
 * next iteration makes only if it evicts the same), it is recorded only
 * as a use to prefetch for: the cursor follows the program's own
 * sequence, the same in every iteration.
 * Return 0 or -ENOMEM (nothing recorded).
 */
int tp_prefetch_on_acquire(struct tp_prefetch *pf, struct tp_tensor *t,
			   uint64_t now, uint64_t work, bool replay);

/* What one pick needs to know of the device and the link. */
struct tp_prefetch_room {
	uint64_t chunk;		/* to count what missing pages take */
	double bytes_per_ns;	/* the host link's bandwidth */
	/* mapping @pages pages back, ns */
	double (*remap_ns)(void *priv, size_t pages);
	void *remap_priv;
};

/*
 * A tensor is picked when it is due: its use comes within this many
 * times the time its reload takes (mapping its chunks, then the copy
 * queued behind the reloads already in flight) (Capuchin's in-trigger:
 * start the swap-in so that it lands just before the use). Earlier, it
 * would only take room that the work before its use needs. Where free
 * chunks do not hold it, the pager makes room from tensors needed later.
 */
#define TP_PREFETCH_DUE_SLACK	2

/**
 * tp_prefetch_pick() - tensors to bring back now, soonest use first.
 * @out, @max: room for the answer.
 * @depth: most prefetches in flight (policy.prefetch.depth).
 * @room: chunk size, link speed and remap cost (TP_PREFETCH_DUE_SLACK).
 * @want: whether a non-resident tensor is worth reloading (not cheaper to
 *        recompute), given the ns until its predicted use (as
 *        tp_prefetch_next_use_ns()); NULL accepts all. Called with the
 *        prefetcher locked: it must not call back into it.
 *
 * Each tensor returned is counted in flight until tp_prefetch_done().
 * Scanning stops at the first tensor not due, so a later use never goes
 * ahead of a sooner one.
 */
size_t tp_prefetch_pick(struct tp_prefetch *pf, struct tp_tensor **out,
			size_t max, unsigned depth,
			const struct tp_prefetch_room *room,
			bool (*want)(void *priv, struct tp_tensor *t,
				     uint64_t next_use_ns),
			void *priv);

/**
 * tp_prefetch_done() - a prefetch of @t completed (@ok) or was never
 * issued (!@ok: it no longer counts, and may be proposed again). One that
 * completed without leaving @t fully resident (nothing of it was in host
 * swap) does not count either, and @t is not proposed again until it is
 * acquired or leaves.
 * Thread-safe.
 */
void tp_prefetch_done(struct tp_prefetch *pf, struct tp_tensor *t, bool ok);

/* @t left device memory: if it was prefetched and not used, it is wasted. */
void tp_prefetch_left(struct tp_prefetch *pf, struct tp_tensor *t);

/* @t is being freed: drop every reference to it. */
void tp_prefetch_forget(struct tp_prefetch *pf, struct tp_tensor *t);

/**
 * tp_prefetch_used_after() - whether @v's predicted next use comes after
 * @t's, both predicted from the last iteration; false when either is not
 * known. A tensor not used again in this iteration comes after any other.
 */
bool tp_prefetch_used_after(struct tp_prefetch *pf, const struct tp_tensor *v,
			    const struct tp_tensor *t);

/**
 * tp_prefetch_next_use_ns() - time until @t's next use, as the last
 * iteration's record puts it (from the step the cursor is at to the step
 * of that use, 1 when that is the op under way); 0 when unknown,
 * UINT64_MAX when the last iteration did not use it again.
 */
uint64_t tp_prefetch_next_use_ns(struct tp_prefetch *pf,
				 const struct tp_tensor *t);

/**
 * tp_prefetch_uses() - tp_prefetch_next_use_ns() into *@next_ns, and into
 * *@reuse_ns the reuse distance: the same, except for a tensor the last
 * iteration did not use again: one made in this iteration is done with
 * (UINT64_MAX: an activation past its last use, which the program is yet
 * to free), one from before (a parameter, optimizer state) is next used in
 * the next iteration: what is left of this one, then the record's time to
 * its first use (a whole iteration when the record has no first use of
 * it). Time here is the program's own compute between the steps
 * (tp_pager_compute_ns()), which paging did not stretch. 0 when unknown.
 */
void tp_prefetch_uses(struct tp_prefetch *pf, const struct tp_tensor *t,
		      uint64_t *next_ns, uint64_t *reuse_ns);

/*
 * tp_prefetch_regen_late() - whether, in one of the last
 * TP_PREFETCH_REGEN_MEMORY recorded iterations that followed a record
 * and thrashed, a regeneration acquired @t after the program's last use
 * of it: a tensor made from it left and came back through it. tp_prefetch_uses() still says "not used again"
 * (nothing to prefetch for); leaving is not free.
 */
bool tp_prefetch_regen_late(struct tp_prefetch *pf, const struct tp_tensor *t);

/*
 * tp_prefetch_thrashed() - whether the iteration about to end recomputed
 * more than it computed; only such an iteration's regenerations teach
 * tp_prefetch_regen_late().
 */
void tp_prefetch_thrashed(struct tp_prefetch *pf, bool yes);

/*
 * tp_prefetch_note_evicted() - @t was chosen to be evicted (whole);
 * tp_prefetch_evictions() - how many times in this iteration it was
 * acquired again after that (brought back: regenerated), 0 when never;
 * outside of iterations, since the last one.
 */
void tp_prefetch_note_evicted(struct tp_prefetch *pf, struct tp_tensor *t);
unsigned tp_prefetch_evictions(struct tp_prefetch *pf,
			       const struct tp_tensor *t);

/**
 * tp_prefetch_next_step() - the record's step of @t's next use from the
 * cursor on: -1 when not known, INT32_MAX when not again this iteration.
 * A position to compare with tp_prefetch_last_step(), not a time.
 */
int64_t tp_prefetch_next_step(struct tp_prefetch *pf,
			      const struct tp_tensor *t);

/**
 * tp_prefetch_last_step() - the record's step of @y's last use in this
 * iteration from the cursor on, for a tensor made in this iteration
 * (what the program frees after its last use): INT32_MIN when it has no
 * use left, -1 when the record does not know it or it outlives the
 * iteration. Compared with tp_prefetch_next_step() of another: @y is
 * done with before that use when less.
 */
int64_t tp_prefetch_last_step(struct tp_prefetch *pf,
			      const struct tp_tensor *y);

/**
 * tp_prefetch_stamp() - changes whenever the answers of the step
 * functions above may (the cursor moved, an iteration began).
 */
uint64_t tp_prefetch_stamp(struct tp_prefetch *pf);

/* Whether a prefetch of @t is in flight. */
bool tp_prefetch_in_flight(struct tp_prefetch *pf, const struct tp_tensor *t);

void tp_prefetch_get_stats(struct tp_prefetch *pf,
			   struct tp_prefetch_stats *st);

/*
 * The record as the planner reads it (policy/planned.c): the program's
 * ops of the iteration, the tensors each read and wrote by the record's
 * names, and what each acquisition knew of its tensor.
 */
struct tp_record_step {
	int32_t name;		/* the step of its tensor's first acquisition */
	uint32_t op;		/* ops of the iteration ended before it */
	bool in_op;		/* made by op @op (else between ops) */
	bool replay;		/* by a regeneration */
	bool born;		/* its tensor was first seen in the iteration */
	unsigned flags;		/* its tensor's TP_* flags */
	size_t bytes, pages;
};

struct tp_record_op {
	uint32_t io;		/* names: io[io .. io + n_in + n_out) */
	uint32_t n_in, n_out;
	uint64_t ns;		/* what it cost, as lineage measured it */
	struct tp_op_split cut;	/* how it may run in parts (rows 0: not) */
	uint64_t out_regen;	/* bit k: lineage can regenerate output k */
};

struct tp_record {
	struct tp_record_step *steps;
	size_t n_steps;
	struct tp_record_op *ops;
	size_t n_ops;
	int32_t *io;		/* a name, -1 where none was known */
	size_t n_io;
	bool followed;		/* the iteration followed a record: its
				 * born flags tell what it made */
};

/*
 * tp_prefetch_op_begin() / tp_prefetch_op_end() - one of the program's
 * ops (a tp_op_run, not a regeneration's replay) begins, ends: @in and
 * @out its tensors, @ns its cost, @out_regen which outputs lineage can
 * regenerate, @cut how it may run in parts (NULL: whole only). Outside
 * an iteration they record nothing; a begin without an end (the op
 * failed) is forgotten at the next begin. op_end: 0 or -ENOMEM.
 */
void tp_prefetch_op_begin(struct tp_prefetch *pf,
			  const struct tp_op_split *cut);
int tp_prefetch_op_end(struct tp_prefetch *pf, struct tp_tensor *const *in,
		       unsigned n_in, struct tp_tensor *const *out,
		       unsigned n_out, uint64_t ns, uint64_t out_regen);

/* How many of the program's ops this iteration has ended. */
uint32_t tp_prefetch_op_index(struct tp_prefetch *pf);

/*
 * tp_prefetch_record() - a copy of the last recorded iteration into @r
 * (tp_record_free() it). Return 0 or -ENOMEM.
 */
int tp_prefetch_record(struct tp_prefetch *pf, struct tp_record *r);
void tp_record_free(struct tp_record *r);

/*
 * tp_prefetch_name() - the name @t has in the last record (the step of
 * its first acquisition there), as this iteration matched it; -1 when
 * the iteration does not follow the record or @t was not matched.
 * tp_prefetch_named() - this iteration's tensor for the record's @name,
 * NULL when none (not made yet, freed, or not matched).
 */
int32_t tp_prefetch_name(struct tp_prefetch *pf, const struct tp_tensor *t);
struct tp_tensor *tp_prefetch_named(struct tp_prefetch *pf, int32_t name);

/*
 * tp_prefetch_bind() - @t, acquired in this iteration, is the record's
 * @name as the op log says (its acquisitions came in another order than
 * the record's: an op run in parts acquires its cut outputs last). True
 * when it is or now becomes that name: unnamed, the name free, the same
 * size.
 */
bool tp_prefetch_bind(struct tp_prefetch *pf, struct tp_tensor *t,
		      int32_t name);

/*
 * tp_prefetch_seen() - whether @t was acquired in this iteration, which
 * follows the record (it has a name to check against the record's).
 */
bool tp_prefetch_seen(struct tp_prefetch *pf, const struct tp_tensor *t);

#endif /* TP_POLICY_PREFETCH_H */
