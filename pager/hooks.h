/* SPDX-License-Identifier: MIT */
/*
 * What the pager asks of the layers above it. The pager never calls up
 * except through these callbacks, which the context installs (policy/ for
 * victims, lineage/ for regeneration). Defaults when none are installed:
 * an LRU over unpinned tensors that offloads (victims), and "cannot
 * regenerate" (regen).
 */
#ifndef TP_PAGER_HOOKS_H
#define TP_PAGER_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp_op_split;
struct tp_tensor;

/* How a victim leaves. */
enum tp_leave {
	TP_LEAVE_OFFLOAD,	/* copy to host swap, then return chunks */
	TP_LEAVE_EVICT,		/* return chunks; lineage regenerates */
};

struct tp_victim_ops {
	/* @t became a candidate: it has resident pages and no pins, is not
	 * in flight and not slab-resident. */
	void (*add)(void *priv, struct tp_tensor *t);
	/* @t stopped being a candidate (pinned, left, freed). */
	void (*del)(void *priv, struct tp_tensor *t);
	/* @t was accessed; t->last_access_ns already updated. */
	void (*touch)(void *priv, struct tp_tensor *t);
	/*
	 * The pager still needs @need_bytes of device memory: choose a
	 * candidate and how it leaves. @no_offload is set when host swap is
	 * full (offload would fail with -ENOSPC). Return 0 with *victim and
	 * *how set, -ENOENT when no candidate can leave, or -TP_EWORK when
	 * the candidates it scored, charged with tp_pager_work(), took the
	 * request past pager.work_limit (as may choose_ahead and
	 * choose_over_wait). The pager calls
	 * del() before moving the victim, so a chosen tensor is never
	 * offered twice in one round.
	 */
	int (*choose)(void *priv, size_t need_bytes, bool no_offload,
		      struct tp_tensor **victim, enum tp_leave *how);
	/*
	 * Optional: choose as above, for room made ahead of need. For a
	 * prefetch of @ahead_of, only a victim predicted to be used after
	 * it (DELTA Alg. 4: never evict something needed sooner); for a
	 * proactive release (@ahead_of NULL), only a victim that would be
	 * offloaded, since evicting before anyone needs the room throws
	 * away work for nothing. -ENOENT when the best candidate does not
	 * qualify. NULL: releases use choose() and stop at an eviction, and
	 * prefetches take free chunks only.
	 */
	int (*choose_ahead)(void *priv, const struct tp_tensor *ahead_of,
			    size_t need_bytes, bool no_offload,
			    struct tp_tensor **victim, enum tp_leave *how);
	/*
	 * Optional: a demand finds its room on its way back, @wait_bytes of
	 * copies to host still to go out before it lands. Choose as
	 * choose() a victim that leaves for less than that wait costs, or
	 * -ENOENT to wait. NULL: always wait.
	 */
	int (*choose_over_wait)(void *priv, size_t need_bytes,
				uint64_t wait_bytes, bool no_offload,
				struct tp_tensor **victim, enum tp_leave *how);
	/*
	 * Optional (may be NULL): a host copy of @bytes (@d2h: offload,
	 * else reload) was seen complete @ns after it was issued; the
	 * measured link bandwidth. Called on the caller's thread.
	 */
	void (*copy_done)(void *priv, bool d2h, uint64_t bytes, uint64_t ns);
	/*
	 * Optional notifications and decisions beyond choosing victims (each
	 * may be NULL; the pager's own behaviour is used then):
	 *
	 * on_acquire: @t is being acquired (every acquire, candidate or not,
	 * before it waits on anything).
	 * forget: @t's struct is about to be freed; drop every reference.
	 * release_bytes: bytes to release proactively now, given @used of
	 * @budget (replaces the pager's pager.high/low_watermark rule).
	 * prefetch_pick: offloaded tensors to reload now into @out (room for
	 * @max), soonest use first; the pager makes room for each from
	 * victims needed after it (choose_ahead) and answers each with
	 * prefetch_done (@ok: its pages came back; not, when no room could
	 * be made for it).
	 * writeback_pick: resident candidates to copy to host swap now
	 * while the link to host is idle (the swap cache), into @out (room
	 * for @max), so that offloading them later copies nothing; 0: none.
	 * recompute_back: for an acquire of an offloaded regenerable @t,
	 * true when regenerating it is cheaper than reloading it.
	 */
	void (*on_acquire)(void *priv, struct tp_tensor *t);
	void (*forget)(void *priv, struct tp_tensor *t);
	uint64_t (*release_bytes)(void *priv, uint64_t used, uint64_t budget);
	size_t (*prefetch_pick)(void *priv, struct tp_tensor **out,
				size_t max);
	void (*prefetch_done)(void *priv, struct tp_tensor *t, bool ok);
	size_t (*writeback_pick)(void *priv, struct tp_tensor **out,
				 size_t max);
	bool (*recompute_back)(void *priv, const struct tp_tensor *t);
	/*
	 * Optional: whether an eviction may take only the pages a request
	 * lacks from a larger victim, the rest staying resident until the
	 * tensor is regenerated whole at its next acquire. NULL: victims
	 * are evicted whole.
	 */
	bool (*partial_evict)(void *priv);
	/*
	 * Optional: whether an op that does not fit whole may run in parts
	 * (TP_OP_SPLITTABLE), the pages of its inputs that a part is done
	 * with leaving before the next. NULL: never.
	 */
	bool (*split)(void *priv);
	/*
	 * Optional: whether the rows of @t an op in parts has read leave for
	 * host swap rather than by eviction (tp_pager_rows_done()): a later
	 * reader could not hold its regeneration. NULL: they are evicted.
	 */
	bool (*rows_offload)(void *priv, const struct tp_tensor *t);
	/*
	 * Optional: whether a free of a resident tensor first lets lineage
	 * regenerate the evicted tensors it would make dearer (the regen
	 * ops' settle). NULL: never.
	 */
	bool (*settle_on_free)(void *priv);
	/*
	 * Optional: whether the policy sends tensors to host swap at all
	 * (an evict-only baseline does not). NULL: it does.
	 */
	bool (*swaps)(void *priv);
	void *priv;
};

struct tp_regen_ops {
	/* Whether @t's evicted pages can be regenerated by replaying ops. */
	bool (*can_regenerate)(void *priv, const struct tp_tensor *t);
	/*
	 * Make every EVICTED page of @t resident again with its old
	 * contents. Called by acquire with the pages it asked for pinned
	 * for the duration, unless some of @t are resident (a partial
	 * eviction's): the replay rewrites them, and they may leave to
	 * make room for it.
	 * Return 0 or -errno (the pages stay EVICTED on failure).
	 */
	int (*regenerate)(void *priv, struct tp_tensor *t);
	/*
	 * The user freed @t (any tensor, slab ones included). Return true
	 * when lineage still needs its record and can regenerate it (fake
	 * deletion): the pager then releases @t's memory but keeps the
	 * struct until lineage calls tp_pager_tensor_put(). Return false
	 * otherwise: the user's reference goes, and the memory is kept
	 * while other references (records reading @t) remain.
	 */
	bool (*on_free)(void *priv, struct tp_tensor *t);
	/*
	 * Optional: the user is about to write @t (tp_tensor_write, or an
	 * acquire with TP_WRITE returns its address), pinned and resident
	 * where written. Whatever regenerates from @t's contents, and @t's
	 * own regeneration, must stop depending on them. Return 0, or
	 * -errno with nothing changed (the write is refused).
	 */
	int (*on_write)(void *priv, struct tp_tensor *t);
	/*
	 * Optional: the user is about to free @t, resident and unpinned,
	 * and the victim ops' settle_on_free said yes. Regenerate what
	 * lineage would otherwise regenerate through @t once it is gone
	 * (MegEngine's real deletion). Failures are not reported: what is
	 * not regenerated stays evicted.
	 */
	void (*settle)(void *priv, struct tp_tensor *t);
	void *priv;
};

/*
 * Lineage and the policy do not see each other (tpager(7), LAYERS): each
 * fills the other's table below with its own functions, and the context
 * hands them over.
 */

/*
 * What lineage tells the policy about recompute. Without it every tensor
 * that t->computable marks (and not TP_UNCOMPUTABLE) costs the op prior of
 * 1 µs, and every other one cannot be regenerated (c_r = INFINITY).
 */
struct tp_cost_ops {
	/* c_r(t), ns: regenerating @t now, including the evicted ancestors
	 * that must be regenerated first (DTR's e*(t)); INFINITY when it
	 * cannot be regenerated. *@anc_pages (never NULL): the evicted pages
	 * of those ancestors, mapped again by the regeneration. */
	double (*recompute_ns)(void *priv, const struct tp_tensor *t,
			       size_t *anc_pages);
	/* What evicting @t costs the regenerations it feeds as well: c_r
	 * plus the evicted tensors made from it (DTR's whole evicted
	 * neighbourhood). NULL: recompute_ns. */
	double (*evict_ns)(void *priv, const struct tp_tensor *t);
	/* c_r(t) when @t is next used: also the resident ancestors @gone
	 * says will have been freed by then (tp_lineage_projected_cost).
	 * NULL: recompute_ns. */
	/* The op that made @t alone: a floor under recompute_ns's answer
	 * (INFINITY when @t cannot be regenerated). NULL: none known. */
	double (*own_ns)(void *priv, const struct tp_tensor *t);
	double (*projected_ns)(void *priv, const struct tp_tensor *t,
			       bool (*gone)(void *gpriv,
					    const struct tp_tensor *y),
			       void *gpriv, size_t *anc_pages);
	/* Whether lineage can regenerate @t at all. */
	bool (*computable)(void *priv, const struct tp_tensor *t);
	/* The bytes the op that made @t reads and writes, held at once by
	 * a regeneration of @t, where ops of its kind read @t back by rows
	 * (*@by_rows; else 0: tp_lineage_regen_bytes()). NULL: unknown. */
	double (*regen_bytes)(void *priv, const struct tp_tensor *t,
			      bool *by_rows);
	/* Whether a regeneration in progress will read @t (or rewrite it):
	 * a use the record of the program's accesses does not know.
	 * NULL: never. */
	bool (*regen_needs)(void *priv, const struct tp_tensor *t);
	/* Whether a replay the regeneration in progress has yet to run
	 * reads @t: it is read now. NULL: never. */
	bool (*regen_reads)(void *priv, const struct tp_tensor *t);
	/* Call @fn for each tensor alive made from @t by a replayable
	 * record (tp_lineage_made_from()). NULL: none known. */
	void (*made_from)(void *priv, const struct tp_tensor *t,
			  void (*fn)(void *fpriv, const struct tp_tensor *o),
			  void *fpriv);
	void *priv;
};

/*
 * What the program's ops tell the layer above (the policy's planner),
 * installed by the context. Called for the ops of tp_op_run(), never for
 * a regeneration's replays.
 *
 * wants_cut: whether begin needs to know how the op may be cut (asking
 * costs a call of the op type's split callback, which whole runs
 * otherwise never pay); NULL: never.
 * begin: op about to acquire @in (@n_in of them); @cut: how it may run in
 * parts (NULL: whole only, or not asked). Return the parts to run it in (the fewest of
 * at least that many that fit), or 0 to run it whole (and in parts only
 * when it does not fit).
 * end: the op ran; @out its outputs, @ns its cost (measured on host, the
 * prior lineage charges on sim and until measured on a device).
 */
struct tp_op_hooks {
	bool (*wants_cut)(void *priv);
	unsigned (*begin)(void *priv, struct tp_tensor *const *in,
			  unsigned n_in, const struct tp_op_split *cut);
	void (*end)(void *priv, struct tp_tensor *const *in, unsigned n_in,
		    struct tp_tensor *const *out, unsigned n_out, uint64_t ns);
	/* @t's c_r went down (an evicted ancestor came back), or what
	 * evicting it costs did (an evicted descendant came back). */
	void (*cost_changed)(void *priv, struct tp_tensor *t);
	void *priv;
};

#endif /* TP_PAGER_HOOKS_H */
