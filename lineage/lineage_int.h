/* SPDX-License-Identifier: MIT */
/*
 * lineage's private state, shared by the files of lineage/ only.
 *
 * A tensor that lineage knows (made by an op, or read by one) has a node
 * in t->lin.p; a tensor made by an op also has t->lin.rec (its record)
 * and t->lin.out (which output it is).
 *
 * References: a record holds one pager reference on each of its inputs
 * (one per use) and lives while one of its outputs is needed; a tensor
 * is needed while the user holds it or a live record reads it. When
 * neither holds, the tensor leaves its producer, which may then go too:
 * releases walk a work list, never the C stack.
 */
#ifndef TP_LINEAGE_LINEAGE_INT_H
#define TP_LINEAGE_LINEAGE_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/list.h>

#include "tpager.h"
#include "lineage/lineage.h"
#include "pager/hooks.h"
#include "pager/pager.h"

struct tp_lin_rec;
struct tp_lin_node;

/* One input of a record: links the record into its input's users. */
struct tp_lin_use {
	struct tp_lin_rec *rec;
	struct tp_lin_node *node;	/* the input's node */
	struct tp_tensor *t;		/* the input (a pager reference) */
	struct tp_lin_use *next, *prev;	/* node's list of users */
	uint64_t version;		/* the input's version it read */
};

struct tp_lin_node {
	struct tp_tensor *t;
	struct cds_list_head link;	/* lineage's list of nodes */
	struct tp_lin_use *users;	/* records reading this tensor */
	size_t nr_users;
	uint64_t version;		/* bumped by each in-place update */
	bool user_freed;		/* fake-deleted: kept for its users */
	bool kept;			/* freed uncomputable, read by records */
	bool severed;			/* made uncomputable; being detached */
	/* union-find for c_r (cost.c); valid while uf_epoch matches */
	uint32_t uf;
	uint32_t uf_epoch;
	/* c_r's walks over users and the projected one (cost.c, settle.c):
	 * seen in walk number cr_mark (the walk over evicted ancestors
	 * marks the tensor, t->lin.mark) */
	uint64_t cr_mark;
	/* work stack mark (regen.c, inplace.c) */
	uint64_t mark;
	/* the regeneration (regen.c, lin->walk) that will read or write it */
	uint64_t walk;
	/* frames on a walk's stack that are still to read it (regen.c) */
	unsigned pending;
};

struct tp_lin_type;

struct tp_lin_rec {
	const struct tp_op_type *type;
	struct cds_list_head link;	/* lineage's list of records */
	struct tp_lin_type *ts;		/* the type's cost */
	void *params;			/* a copy, or NULL */
	size_t params_len;
	unsigned n_in, n_out;
	unsigned refs;			/* outputs still needed */
	bool replayable;		/* false: nondeterministic or severed */
	double cost_ns;			/* moving average of this record */
	double view_ns;			/* ops that made views of its
					 * outputs (tp_lineage_add_view_cost) */
	uint64_t seq;			/* creation order */
	uint64_t mark;
	struct tp_lin_use *in;		/* n_in */
	struct tp_tensor **out;		/* n_out; NULL once that output left */
	size_t *out_bytes;		/* n_out */
	/*
	 * Of a TP_OP_SPLIT_LAST_READS type, the outputs in the slab (never
	 * attached): held (a pager reference) with their version then, so
	 * that rows of the others can be made again (regen_rows.c); NULL:
	 * none kept.
	 */
	struct tp_tensor **whole;
	uint64_t *whole_version;
};

/* Per op type: the moving average of its cost (cost.c). */
struct tp_lin_type {
	const struct tp_op_type *type;
	double avg_ns;
	uint64_t runs;
};

struct tp_lin_uf_node {
	uint32_t parent;
	uint32_t rank;
	double cost;			/* class total, at the root */
	double own;			/* this member's share */
	size_t pages;			/* class's evicted pages, at the root */
	size_t own_pages;		/* this member's evicted pages */
};

/* A growable vector of pointers, for lineage's walks (tp_lin_ptrs_push()). */
struct tp_lin_ptrs {
	void **v;
	size_t n, cap;
};

/* Room for one more in @p. Return: 0, or -ENOMEM with @p unchanged. */
int tp_lin_ptrs_grow(struct tp_lin_ptrs *p);

/*
 * Append @x to @p. Return: 0, or -ENOMEM with @p unchanged. Inline: c_r's
 * walk pushes once per evicted ancestor of every candidate it is asked.
 */
static inline int tp_lin_ptrs_push(struct tp_lin_ptrs *p, void *x)
{
	if (p->n == p->cap && tp_lin_ptrs_grow(p))
		return -ENOMEM;
	p->v[p->n++] = x;
	return 0;
}

struct tp_lineage {
	struct tp_pager *pg;
	struct tp_vmm *vmm;
	struct tp_tracer *tracer;	/* NULL: none */
	struct tp_lineage_conf conf;
	struct tp_errors errors;
	struct tp_ctx *owner;		/* opaque: each launch's context */
	struct tp_regen_ops ops;

	/* op types: open addressing on the type pointer */
	struct tp_lin_type **types;
	size_t nr_types, cap_types;

	/* union-find arena, rebuilt lazily when too many members died */
	struct tp_lin_uf_node *uf;
	uint32_t uf_len, uf_epoch, uf_dead;
	size_t uf_cap;
	uint64_t uf_queries;
	uint64_t cr_epoch;		/* c_r's walks so far */
	struct tp_lin_node **uf_stk;	/* the class walk's stack */
	size_t uf_stk_cap;
	struct tp_lin_ptrs anc_stk;	/* records c_r's exact walk is to read */

	struct cds_list_head nodes;
	struct cds_list_head recs;
	unsigned nesting;		/* regenerations in progress */
	uint64_t walk;			/* outermost regenerations so far */
	uint64_t rec_seq;
	uint64_t mark_seq;
	/* pointer work list reused by releases and walks */
	void **work;
	size_t nr_work, cap_work;

	struct tp_op_hooks op_hooks;

	struct tp_lin_timing *timing;	/* device timing of launches */
	const struct tp_tensor *settling; /* being freed (settle.c) */

	struct tp_lineage_stats st;
};

static inline struct tp_lin_node *tp_lin_node_of(const struct tp_tensor *t)
{
	return t->lin.p;
}

static inline struct tp_lin_rec *tp_lin_rec_of(const struct tp_tensor *t)
{
	return t->lin.rec;
}

/* --- record.c -------------------------------------------------------- */

/**
 * tp_lin_node_get() - @t's node, created on first use.
 * Return: the node, or NULL with errno ENOMEM.
 */
struct tp_lin_node *tp_lin_node_get(struct tp_lineage *lin,
				    struct tp_tensor *t);

/**
 * tp_lin_rec_new() - a record of @type with a copy of @params, reading
 * @inputs (their current versions; a pager reference taken on each) and
 * producing @n_out outputs not attached yet.
 * Return: the record, or NULL with errno (ENOMEM); nothing changed then.
 */
struct tp_lin_rec *tp_lin_rec_new(struct tp_lineage *lin,
				  const struct tp_op_type *type,
				  const void *params, size_t params_len,
				  struct tp_tensor *const *inputs, unsigned n_in,
				  const size_t *out_bytes, unsigned n_out);

/**
 * tp_lin_rec_attach() - make @t output @k of @rec: computable, needed.
 */
void tp_lin_rec_attach(struct tp_lineage *lin, struct tp_lin_rec *rec,
		       unsigned k, struct tp_tensor *t);

/*
 * tp_lin_rec_keep_whole() - hold @t, output @k of @rec in the slab, and
 * its version now (struct tp_lin_rec, whole). Return: 0 or -ENOMEM.
 */
int tp_lin_rec_keep_whole(struct tp_lineage *lin, struct tp_lin_rec *rec,
			  unsigned k, struct tp_tensor *t);

/**
 * tp_lin_rec_discard() - drop a record no output was attached to.
 */
void tp_lin_rec_discard(struct tp_lineage *lin, struct tp_lin_rec *rec);

/**
 * tp_lin_detach() - @t stops being an output of its record (it becomes
 * uncomputable); the record, and what only it kept, may go.
 */
void tp_lin_detach(struct tp_lineage *lin, struct tp_tensor *t);

/* The pager's on_free callback: fake deletion. */
bool tp_lin_on_free(void *priv, struct tp_tensor *t);

/*
 * tp_lin_settle() - the pager's settle callback (settle.c): @t, resident,
 * is about to be freed; regenerate first the evicted tensors the program
 * holds whose price the free would more than double.
 */
void tp_lin_settle(void *priv, struct tp_tensor *t);

/* Drop every record (tp_lineage_destroy). */
void tp_lin_records_fini(struct tp_lineage *lin);

/* Work list helpers (grow on demand). */
int tp_lin_work_push(struct tp_lineage *lin, void *p);

/* --- cost.c ---------------------------------------------------------- */

/**
 * tp_lin_type_get() - @type's cost entry, created with its prior.
 * Return: the entry or NULL with errno.
 */
struct tp_lin_type *tp_lin_type_get(struct tp_lineage *lin,
				    const struct tp_op_type *type);

/*
 * The cost the sim backend charges for @type, and its prior elsewhere:
 * @vmm's model of its device for the op's work (the sim's measured
 * profiles), else the type's own cost_ns.
 */
uint64_t tp_lin_type_prior_ns(struct tp_vmm *vmm,
			      const struct tp_op_type *type,
			      const void *params, size_t params_len,
			      const size_t *in_bytes, unsigned n_in);

/**
 * tp_lin_note_cost() - fold a measurement of @ns into @rec's and its
 * type's moving averages (lineage.cost_alpha).
 */
void tp_lin_note_cost(struct tp_lineage *lin, struct tp_lin_rec *rec,
		      uint64_t ns);

/* Fold a measurement into @ts alone (ops that leave no record). */
void tp_lin_note_type_cost(struct tp_lineage *lin, struct tp_lin_type *ts,
			   uint64_t ns);

/* --- op_timing.c: device time of launches, read without synchronising. */

/**
 * tp_lin_timing_begin() - record a start event on the compute stream
 * before an asynchronous launch (harvesting completed pairs first).
 * Return: 0, -EOPNOTSUPP where launches are timed on the host or charged
 * (nothing recorded), or a backend error.
 */
int tp_lin_timing_begin(struct tp_lineage *lin);
/**
 * tp_lin_timing_end() - record the end event after a launch that
 * succeeded; the pair then waits for tp_lin_timing_claim().
 * @recompute: a replay (its time counts as recompute time).
 */
int tp_lin_timing_end(struct tp_lineage *lin, bool recompute);
/**
 * tp_lin_timing_claim() - give the pair just ended its owner: @rec (its
 * and its type's averages), or @ts alone when @rec is NULL. The cost and
 * the pager's compute or recompute time are noted when the device time
 * is read. Return: false when no pair is waiting (the caller notes the
 * cost it measured itself).
 */
bool tp_lin_timing_claim(struct tp_lineage *lin, struct tp_lin_rec *rec,
			 struct tp_lin_type *ts);
/* Fold every completed pair in; never waits. */
void tp_lin_timing_harvest(struct tp_lineage *lin);
/* @rec is going: its pending pairs fold into its type alone. */
void tp_lin_timing_forget(struct tp_lineage *lin, struct tp_lin_rec *rec);
/* Drop pending pairs and their events (lineage destroy). */
void tp_lin_timing_fini(struct tp_lineage *lin);

/* Union-find bookkeeping: @t is resident again / leaves lineage. */
void tp_lin_uf_forget(struct tp_lineage *lin, struct tp_lin_node *n);
void tp_lin_cost_fini(struct tp_lineage *lin);

/* --- launch.c -------------------------------------------------------- */

/*
 * One part of a split run (op_split.c): rows [row0, row0 + rows) of
 * @total; @whole_in_bytes are the inputs' whole sizes, which the op's
 * cost is of.
 */
struct tp_lin_part {
	unsigned part, parts;
	size_t row0, rows, total;
	const size_t *whole_in_bytes;
	int sums;		/* struct tp_op_split's, and its passes */
	unsigned pass, passes;
};

/**
 * tp_lin_launch() - run @type on the compute stream with the given device
 * addresses and measure it: the host clock on host, the charged cost on
 * sim (for a @part, its share of the rows). *@ns receives the cost.
 * Return: 0 or the launch function's (or backend's) error.
 */
int tp_lin_launch(struct tp_lineage *lin, const struct tp_op_type *type,
		  const void *params, size_t params_len,
		  void *const *in, const size_t *in_bytes, unsigned n_in,
		  void *const *out, const size_t *out_bytes, unsigned n_out,
		  bool recompute, const struct tp_lin_part *part, uint64_t *ns);

/* --- regen_rows.c ---------------------------------------------------- */

/*
 * tp_lin_rows_regenerable() - whether rows of the evicted @t can be
 * regenerated alone: its producer is local to its rows (every output
 * cut, no sums) and replays, reading what it read. Its evicted cut
 * inputs come back by rows where they are such in turn, else whole.
 */
bool tp_lin_rows_regenerable(struct tp_lineage *lin,
			     const struct tp_tensor *t);

/*
 * tp_lin_regen_rows() - bytes [@off, @off + @len) of @t's contents,
 * regenerated into a scratch tensor by replaying its producer on the
 * rows that cover them (and so on down the chain): *@sc, acquired, to be
 * given back with tp_lin_rows_put(); *@addr, where byte @off is in it.
 * @t is not written. Return: 0, -ENOMEM (no room, or not regenerable by
 * rows), or a launch's error.
 */
int tp_lin_regen_rows(struct tp_lineage *lin, struct tp_tensor *t,
		      size_t off, size_t len, struct tp_tensor **sc,
		      char **addr);
void tp_lin_rows_put(struct tp_lineage *lin, struct tp_tensor *sc);
/*
 * tp_lin_rows_cost() - what regenerating rows of @t holds at most: bytes
 * per byte asked for (*@ratio), and bytes whatever the rows (*@fixed).
 */
void tp_lin_rows_cost(struct tp_lineage *lin, const struct tp_tensor *t,
		      double *ratio, size_t *fixed);

/* --- op_split.c ------------------------------------------------------ */

struct tp_op_split;

/*
 * An op's inputs are acquired in the program's order. One to regenerate
 * (@failed) that found no room (@ret -ENOMEM) while @held others were
 * held is worth a second order, with nothing held: tp_lin_regen_first().
 */
static inline bool tp_lin_regen_retry(int ret, const struct tp_tensor *failed,
				      unsigned held)
{
	return ret == -ENOMEM && held && tp_pager_has_evicted(failed);
}

/*
 * The second order: the @n inputs with evicted pages (a regeneration
 * each) first, then the others, each group in the program's order. Fixed
 * before any is acquired, as a regeneration may evict the others.
 */
static inline void tp_lin_regen_first(struct tp_tensor *const *in,
				      unsigned n, unsigned *order)
{
	unsigned k, i = 0;

	for (k = 0; k < n; k++)
		if (tp_pager_has_evicted(in[k]))
			order[i++] = k;
	for (k = 0; k < n; k++)
		if (!tp_pager_has_evicted(in[k]))
			order[i++] = k;
}

/* Bit @k of a split's mask (struct tp_op_split): tensor @k is cut. */
static inline bool tp_lin_is_cut(uint64_t mask, unsigned k)
{
	return k < 64 && (mask >> k) & 1;
}

/* The bytes @rec's inputs and outputs take: what a replay of it holds. */
double tp_lin_rec_bytes(const struct tp_lin_rec *rec);

/**
 * tp_lin_split_cut() - whether a run of @type with these params, inputs
 * and output sizes may run in parts, and how (@s): splittable, not in place, the
 * policy willing (policy.split), at least two rows dividing every cut
 * tensor.
 */
bool tp_lin_split_cut(struct tp_lineage *lin, const struct tp_op_type *type,
		      const void *params, size_t params_len,
		      struct tp_tensor *const *in, unsigned n_in,
		      const size_t *out_bytes, unsigned n_out,
		      struct tp_op_split *s);

/**
 * tp_lin_run_split() - run an op in parts, as @s cuts it: acquire,
 * launch and release each part, the pages of the cut inputs a part is
 * done with evicted when the next lacks room.
 * @in: the op's inputs; @out: its outputs, made and not acquired;
 * @recompute: a replay by lineage; @parts: run it in at least this many
 * (a plan's; 0: the fewest that fit). *@ns receives the cost of all
 * parts.
 * Return: 0, or -ENOMEM when no number of parts fits, or an error of
 * acquire or launch; on failure what was written to @out is worth
 * nothing and nothing is held.
 */
int tp_lin_run_split(struct tp_lineage *lin, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *in, unsigned n_in,
		     struct tp_tensor *const *out, unsigned n_out,
		     const struct tp_op_split *s, bool recompute,
		     unsigned parts, uint64_t *ns);

/* --- regen.c --------------------------------------------------------- */

/* The pager's regenerate callback. */
int tp_lin_regenerate_cb(void *priv, struct tp_tensor *t);

/* --- inplace.c ------------------------------------------------------- */

/**
 * tp_lin_sever() - the contents of uncomputable @t (its current version)
 * are about to change. Every live tensor whose regeneration needs them is
 * regenerated now if evicted and made uncomputable; the records that
 * read them then go.
 * Return: 0, or the error of a regeneration (every tensor then keeps its
 * state and computability).
 */
int tp_lin_sever(struct tp_lineage *lin, struct tp_tensor *t);

/**
 * tp_lin_on_write() - the pager's on_write callback: the user is about to
 * write @t (pinned, resident where written). What was made from its
 * contents is severed and, when an op made @t, @t is detached from that
 * op (regenerated first where a partial eviction left pages behind).
 * Return: 0, or the error of a regeneration, with nothing changed.
 */
int tp_lin_on_write(void *priv, struct tp_tensor *t);

#endif /* TP_LINEAGE_LINEAGE_INT_H */
