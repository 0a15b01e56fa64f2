/* SPDX-License-Identifier: MIT */
/*
 * The pager's private state, shared by the files of pager/ only.
 *
 * The pager's private header, past the usual length: one section per
 * file of pager/, so that what a file shares with the others is declared
 * in one place.
 */
#ifndef TP_PAGER_PAGER_INT_H
#define TP_PAGER_PAGER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu-bp.h>
#include <urcu/list.h>
#include <urcu/rculfhash.h>

#include "pager/pager.h"
#include "pager/watermark.h"
#include "vmm/vmm.h"

enum tp_page_state {
	TP_PAGE_UNBACKED,	/* never written: no chunk, no contents */
	TP_PAGE_RESIDENT,	/* a chunk is mapped and holds the data */
	TP_PAGE_OFFLOADING,	/* d2h copy in flight; chunk goes after it */
	TP_PAGE_OFFLOADED,	/* data only in host swap */
	TP_PAGE_RELOADING,	/* h2d copy in flight into a fresh chunk */
	TP_PAGE_EVICTED,	/* no data anywhere; lineage regenerates it */
	TP_NR_PAGE_STATES,
};

/*
 * The swap cache: a RESIDENT page may keep a host copy of its contents
 * (@swap), kept from its reload or written back ahead of need while the
 * link to host was idle (tp_pager_writeback). Offloading such a page
 * copies nothing; any acquire for writing drops the copy first
 * (tp_pager_uncache), so a copy in the cache always equals the page.
 * @ev is then the last copy that used the buffer, which it may not be
 * reused before.
 */
struct tp_page {
	struct tp_chunk *chunk;	/* RESIDENT, RELOADING, OFFLOADING */
	void *swap;		/* host copy: OFFLOADING, OFFLOADED, RELOADING;
				 * RESIDENT: the swap cache's */
	struct tp_event *ev;	/* the copy in flight (a reference) */
	uint8_t state;
	/*
	 * OFFLOADING, OFFLOADED, EVICTED: it left with its bytes, still
	 * mapped at its address until the vmm's deferred unmap; a rescue
	 * may take that memory back (tp_pager_rescue()).
	 */
	uint8_t left_mapped;
	unsigned pins;
};

/* Consecutive chunk indices behind consecutive pages (chunk_runs.c). */
struct tp_chunk_run {
	size_t start;
	size_t len;
};

/* One node of the address table: a chunk-aligned address -> its owner. */
struct tp_lnode {
	struct cds_lfht_node node;
	uintptr_t key;
	struct tp_tensor *t;	/* a paged tensor's page, or */
	struct tp_slab *slab;	/* a slab chunk */
};

/*
 * A tensor's lookup nodes, and the RCU head that frees the tensor once no
 * lookup can still be reading it.
 */
struct tp_lnodes {
	struct rcu_head rcu;
	struct tp_tensor *t;
	size_t n;
	struct tp_lnode node[];
};

/* Host swap: chunk-sized buffers recycled through a stack. */
struct tp_swap_defer {
	void *buf;
	struct tp_event *ev;	/* buffer is free once this completes */
};

/* Pieces of host swap in preparation at most: the bound on what is
 * prepared ahead (16 x pager.swap_ahead) in pieces of pager.swap_ahead. */
#define TP_SWAP_PIECES	16

struct tp_swap_piece {
	void *token;		/* tp_vmm_host_prepare()'s */
	size_t n;		/* buffers */
};

struct tp_swap {
	size_t max;		/* buffers allowed; SIZE_MAX: no limit */
	size_t allocated;	/* buffers obtained from the backend */
	size_t used;		/* buffers holding data or in flight */
	size_t cached;		/* of which copies of RESIDENT pages */
	size_t peak;
	void **free;		/* stack of idle buffers */
	size_t nr_free, cap_free;
	struct tp_swap_defer *defer;	/* buffers waiting on an event */
	size_t nr_defer, cap_defer;
	/* What the backend gave: runs of buffers, freed whole at the end;
	 * in address order. */
	struct tp_swap_block *blocks;
	size_t nr_blocks, cap_blocks;
	/*
	 * Host memory being prepared ahead of need (tp_vmm_host_prepare()):
	 * @nr_prep pieces of pager.swap_ahead (@ahead_min buffers) at most,
	 * oldest first, @prep_n buffers in all.
	 */
	struct tp_swap_piece prep[TP_SWAP_PIECES];
	size_t nr_prep;
	size_t prep_n;
	size_t ahead_min;
	/* What memory obtained at once cost the caller so far. */
	uint64_t grown_ns, grown_bytes;
};

struct tp_swap_block {
	void *base;
	size_t n;		/* buffers */
};

/* A freed tensor's range kept mapped for the next tensor of its size. */
struct tp_cached_range {
	struct cds_list_head link;	/* oldest first */
	struct cds_list_head size_link;	/* its bucket, oldest first */
	uintptr_t va;
	size_t nr_pages;
	struct tp_event *last_use;	/* its tensor's, or NULL */
	/* The evicted tensor whose bytes it still holds (pager.move_evicted),
	 * which a rescue gives them back to; NULL once free memory. */
	struct tp_tensor *owner;
	struct tp_chunk *chunks[];
};

/* Buckets by page count: a tensor's creation looks in one, not in all of
 * a step's freed ranges. */
#define TP_RANGE_BUCKETS	64

struct tp_range_cache {
	struct cds_list_head ranges;
	struct cds_list_head by_size[TP_RANGE_BUCKETS];
	size_t chunks;			/* held by cached ranges */
};

#define TP_SLAB_MIN_SHIFT	6	/* 64-byte slots at least */
#define TP_SLAB_CLASSES		24

/* A slab chunk: one mapped chunk cut into equal slots. */
struct tp_slab {
	struct cds_list_head link;	/* its class's list */
	uintptr_t va;
	struct tp_chunk *chunk;
	unsigned cls;			/* slot size is 1 << cls */
	unsigned nr_slots, nr_used;
	struct tp_tensor **owner;	/* read by lookups under RCU */
	struct tp_lnode lnode;
	struct rcu_head rcu;
};

struct tp_slabs {
	size_t max_bytes;		/* tensors below this go into slabs */
	struct cds_list_head cls[TP_SLAB_CLASSES];
	size_t chunks;			/* chunks held by slabs */
	size_t idle;			/* of which hold no tensor */
};

/* A batch of copies in flight, timed until its event is seen complete. */
struct tp_copy_rec {
	struct tp_event *start;		/* on the copy stream before it, or NULL */
	struct tp_event *ev;
	uint64_t t0;
	uint64_t bytes;
	bool d2h;
};

/* Pager counters behind struct tp_stats. */
struct tp_pager_counters {
	uint64_t offloads, reloads, evictions, recomputes, recompute_ns;
	uint64_t partial_evictions;
	uint64_t rescued_pages;		/* tp_pager_rescue() */
	uint64_t split_runs, split_parts;
	uint64_t rows_regenerated;
	uint64_t prefetch_issued, prefetch_hits, prefetch_late, prefetch_wasted;
	uint64_t writebacks, cache_offloads;
	uint64_t bytes_d2h, bytes_h2d, stall_ns, compute_ns;
	uint64_t cache_hits, cache_misses;
	uint64_t ranges_moved, ranges_adopted;	/* pager.move_evicted */
	uint64_t held_peak;
	uint64_t copy_d2h_ns, copy_h2d_ns;
	uint64_t swap_full;
};

struct tp_pager {
	struct tp_vmm *vmm;
	struct tp_tracer *tracer;	/* NULL: none */
	struct tp_pager_conf conf;
	struct tp_errors errors;
	struct tp_watermark wm;		/* its release without a policy's */
	size_t chunk;			/* bytes per chunk */
	size_t held;			/* chunks held: tensors, cache, slabs */
	size_t pinned_resident;		/* pages pinned and resident: every
					 * tensor's pinned_pages */
	bool host_waits;		/* acquire blocks the host on copies */
	unsigned replaying;		/* replays in progress */
	uint64_t next_id;
	uint64_t access_seq;
	size_t tensors_live;
	struct cds_list_head tensors;
	struct cds_list_head inflight;	/* tensors with copies in flight */
	struct cds_list_head cands;	/* tensors offered to the victim ops */
	struct tp_victim_ops victim;
	struct tp_regen_ops regen;
	struct cds_list_head lru;	/* default victim ops' candidates */
	struct cds_lfht *ht;
	struct tp_swap swap;
	struct tp_range_cache cache;
	/* The tensor free_chunks() makes room for, whole (it may take a
	 * victim's range: tp_pager_moves_into_room()), or NULL. */
	const struct tp_tensor *room_for;
	struct tp_slabs slabs;
	struct tp_pager_counters c;
	struct tp_copy_rec *copies;	/* in flight, oldest first */
	size_t nr_copies, cap_copies;
	/* bytes of copies[] by direction ([1]: to host), kept beside it:
	 * the policy reads the backlog per candidate it scores */
	uint64_t copy_bytes[2];
	/* a run's per-page handles, handed to the vmm (handles.c) */
	struct tp_chunk **run_buf;
	size_t run_cap;
	/* the last use event recorded, and the compute work it covers */
	struct tp_event *use_ev;
	uint64_t use_work;
	bool use_stale;			/* the caller may have issued work */
	/* paging work (work.c) */
	struct {
		unsigned depth;		/* requests under way, nested */
		uint64_t req;		/* units of the outermost one */
		uint64_t iter;		/* units since the iteration began */
		uint64_t reqs;		/* requests begun since */
		bool over;		/* the request under way was stopped */
		bool in_iter;		/* between tp_iteration_begin and end */
		uint64_t recompute0;	/* recompute_ns when it began */
	} work;
};

/* --- page_state.c ---------------------------------------------------- */

/**
 * tp_page_legal() - whether a page may go from @from to @to.
 */
bool tp_page_legal(enum tp_page_state from, enum tp_page_state to);

/**
 * tp_page_set() - move page @p of @t to @to, keeping @t's counters of
 * resident, evicted and in-flight pages. Debug builds abort on an illegal
 * transition; this is the only place a page's state changes.
 */
void tp_page_set(struct tp_tensor *t, struct tp_page *p, enum tp_page_state to);

/* Page @p of @t is backed by chunk @c now (NULL: by none). */
static inline void tp_page_set_chunk(struct tp_tensor *t, struct tp_page *p,
				     struct tp_chunk *c)
{
	p->chunk = c;
	t->runs_valid = false;
}

const char *tp_page_state_name(enum tp_page_state s);

/* --- helpers --------------------------------------------------------- */

/* Bytes of page @i of @t that hold data (the last page may be partial). */
static inline size_t tp_page_len(const struct tp_pager *pg,
				 const struct tp_tensor *t, size_t i)
{
	size_t off = i * pg->chunk;

	return t->bytes - off < pg->chunk ? t->bytes - off : pg->chunk;
}

/* Whether page @p needs a chunk for an access that @discard-s contents. */
static inline bool tp_page_needs_chunk(const struct tp_page *p, bool discard)
{
	switch (p->state) {
	case TP_PAGE_UNBACKED:
	case TP_PAGE_OFFLOADED:
		return true;
	case TP_PAGE_EVICTED:
		return discard;
	default:
		return false;
	}
}

/* Pages [@first, @last] of @t that need a chunk (tp_page_needs_chunk()). */
static inline size_t tp_pages_needing_chunks(const struct tp_tensor *t,
					     size_t first, size_t last,
					     bool discard)
{
	size_t n = 0;

	for (size_t i = first; i <= last; i++)
		n += tp_page_needs_chunk(&t->pages[i], discard);
	return n;
}

/* --- accounting.c ---------------------------------------------------- */

/**
 * tp_pager_cand_update() - offer @t to the victim ops, or withdraw it,
 * after anything that changes whether it can leave.
 */
void tp_pager_cand_update(struct tp_pager *pg, struct tp_tensor *t);

/**
 * tp_pager_cand_drop() - withdraw @t from the victim ops (if offered), as
 * when it is chosen and on its way out.
 */
void tp_pager_cand_drop(struct tp_pager *pg, struct tp_tensor *t);

/**
 * tp_pager_rereserve() - reserve a range again for a fake-deleted tensor
 * whose range was released with its memory (before backing its pages).
 * Return: 0 or the vmm's error.
 */
int tp_pager_rereserve(struct tp_pager *pg, struct tp_tensor *t);

/* Chunks held by the pager changed by @delta. */
void tp_pager_held_add(struct tp_pager *pg, long delta);

/* Report a failure @err with a printf-style message (pg->errors). */
__attribute__((format(printf, 3, 4)))
void tp_pager_error(struct tp_pager *pg, int err, const char *fmt, ...);

/*
 * Whether @t may be evicted at all; tp_pager_can_evict(): and now, its
 * rows held by no op in parts (pager/rows.c), whose own rows read only
 * that op lets go (tp_pager_rows_done()).
 */
bool tp_pager_evictable(struct tp_pager *pg, const struct tp_tensor *t);
bool tp_pager_can_evict(struct tp_pager *pg, const struct tp_tensor *t);
/* A tensor's pages leave: a prefetch of it that was never used is
 * counted wasted. */
void tp_pager_note_leave(struct tp_pager *pg, struct tp_tensor *t);
/* Before @t's pages leave (offload, evict): -EBUSY while pinned, else its
 * copies in flight have landed. */
int tp_pager_settle_to_leave(struct tp_pager *pg, struct tp_tensor *t);
/* tp_pager_evict_range() once the caller has checked that it may. */
int tp_pager_evict_range_checked(struct tp_pager *pg, struct tp_tensor *t,
				 size_t off, size_t len);

/**
 * tp_pager_compute_event() - an event recorded on the compute stream now
 * (one reference), or NULL with errno.
 */
struct tp_event *tp_pager_compute_event(struct tp_pager *pg);

/**
 * tp_pager_leave_fence() - what @t's pages leave behind them: with
 * ordered reuse, the event after the last work issued on @t (its last
 * release), which work on the stream since does not delay; else, or when
 * @t has none, an event on the compute stream now. One reference, or
 * NULL with errno.
 */
struct tp_event *tp_pager_leave_fence(struct tp_pager *pg,
				      struct tp_tensor *t);

/* --- copies.c -------------------------------------------------------- */

/**
 * tp_pager_poll() - observe completed copies: OFFLOADING pages become
 * OFFLOADED, prefetched pages RESIDENT, deferred swap buffers free.
 */
void tp_pager_poll(struct tp_pager *pg);

/**
 * tp_pager_settle() - wait for the copies in flight on pages
 * [@first, @last] of @t and complete them.
 * Return: 0 or the event's error (pages stay in flight).
 */
int tp_pager_settle(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		    size_t last);

/**
 * tp_pager_copy_start() - a timed event recorded on copy stream @s before
 * a batch of copies is issued (after the stream waits on what the copies
 * depend on): where the batch starts. NULL when it cannot be made (the
 * batch is then timed from its issue).
 */
struct tp_event *tp_pager_copy_start(struct tp_pager *pg, enum tp_stream s);

/*
 * tp_pager_copy_issued() - time a batch of @bytes issued at @t0 whose
 * completion is @ev (a reference is taken), from @start (from
 * tp_pager_copy_start(); its reference is handed over; NULL: from @t0).
 */
void tp_pager_copy_issued(struct tp_pager *pg, struct tp_event *start,
			  struct tp_event *ev, uint64_t t0, uint64_t bytes,
			  bool d2h);

/*
 * tp_pager_copy_event() - a timed event recorded on copy stream @s after
 * a batch of copies, into *@ev. Return 0 or -errno (*@ev NULL).
 */
int tp_pager_copy_event(struct tp_pager *pg, enum tp_stream s,
			struct tp_event **ev);

/* Mark @t as having copies to poll. */
void tp_pager_inflight_add(struct tp_pager *pg, struct tp_tensor *t);

/*
 * @t has no page in flight any more: off the in-flight list, a prefetch
 * of the policy's answered.
 */
void tp_pager_inflight_done(struct tp_pager *pg, struct tp_tensor *t);

/* Observe completed copies; with @all, wait for every one. */
void tp_pager_poll_copies(struct tp_pager *pg, bool all);

/* --- swap_cache.c ---------------------------------------------------- */

/**
 * tp_pager_cache_page() - page @p of @t, RESIDENT, keeps host buffer @buf
 * as its copy, which copy @ev (may be NULL) still uses.
 */
void tp_pager_cache_page(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_page *p, void *buf, struct tp_event *ev);

/**
 * tp_pager_reloaded_buffer() - page @p of @t is RESIDENT again from host
 * buffer @buf, which copy @ev (may be NULL) still reads: the swap cache
 * keeps it (pager.swap_cache), or it is freed once @ev completes.
 */
void tp_pager_reloaded_buffer(struct tp_pager *pg, struct tp_tensor *t,
			      struct tp_page *p, void *buf,
			      struct tp_event *ev);

/**
 * tp_pager_uncache() - drop the swap cache's copies of pages [@first,
 * @last] of @t (before they are written, or leave other than by offload);
 * their buffers are free once the copies using them complete.
 */
void tp_pager_uncache(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		      size_t last);

/**
 * tp_pager_cache_settle() - let the copies into the swap cache that still
 * read @t's chunks (writebacks, which leave the pages RESIDENT) complete,
 * before the chunks are unmapped or handed to another range: a copy
 * reading an unmapped chunk faults. If a copy cannot be observed, waits
 * for the whole device.
 */
void tp_pager_cache_settle(struct tp_pager *pg, struct tp_tensor *t);

/**
 * tp_pager_cache_shrink() - drop cached copies, of tensors other than
 * @keep, until @want buffers came free or none is left. Return: buffers
 * freed.
 */
size_t tp_pager_cache_shrink(struct tp_pager *pg, size_t want,
			     const struct tp_tensor *keep);

/* Drop the cached host copy of RESIDENT page @p of @t, if it has one. */
void tp_pager_uncache_page(struct tp_pager *pg, struct tp_tensor *t,
			   struct tp_page *p);

/* --- unmap.c --------------------------------------------------------- */

/* How unmapped pages are left (tp_pager_unmap_range). */
enum tp_unmap_how {
	TP_UNMAP_TEARDOWN,	/* they only lose their chunks */
	TP_UNMAP_DROP,		/* EVICTED, their bytes worth nothing */
	TP_UNMAP_EVICT,		/* EVICTED with bytes a rescue may keep */
};

/**
 * tp_pager_unmap_range() - unmap the unpinned RESIDENT pages of @t in
 * [@first, @last] after @ev, run by run, the first @most of them
 * (SIZE_MAX: all), left as @how says. Return 0 or the first error (later
 * runs stay). tp_pager_unmap_pages() does it over the whole tensor, the
 * pages EVICTED (dropped) with @evict.
 */
int tp_pager_unmap_range(struct tp_pager *pg, struct tp_tensor *t,
			 size_t first, size_t last, struct tp_event *ev,
			 enum tp_unmap_how how, size_t most);
int tp_pager_unmap_pages(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_event *ev, bool evict, size_t most);

/* --- tensor.c -------------------------------------------------------- */

/*
 * Pages of @t still OFFLOADING go to @to (their copies left to finish);
 * their swap buffers come back after the copies.
 */
void tp_pager_drop_offloading(struct tp_pager *pg, struct tp_tensor *t,
			      enum tp_page_state to);

/* --- rescue.c -------------------------------------------------------- */

/**
 * tp_pager_rescue() - bring back, with the bytes they left with, the
 * pages of @t in [@first, @last] that left (evicted, offloaded, or on
 * their way) while their memory is still mapped at their address and no
 * one has taken it (tp_vmm_rescue()): no copy, no recompute. A host copy
 * stays as the swap cache's. Return: the pages that came back.
 */
size_t tp_pager_rescue(struct tp_pager *pg, struct tp_tensor *t,
		       size_t first, size_t last);

/* --- handles.c ------------------------------------------------------- */

/*
 * The first page of the handle behind page @i of @t, and the page past
 * its last (page @i holds a chunk).
 */
size_t tp_pager_handle_start(const struct tp_pager *pg,
			     const struct tp_tensor *t, size_t i);
size_t tp_pager_handle_end(const struct tp_pager *pg,
			   const struct tp_tensor *t, size_t i);

/*
 * tp_pager_handle_can_go() - whether the handle behind page @i of @t lies
 * wholly in [@first, @last] with every page of it RESIDENT and unpinned:
 * it may be unmapped.
 */
bool tp_pager_handle_can_go(const struct tp_pager *pg,
			    const struct tp_tensor *t, size_t i,
			    size_t first, size_t last);

/*
 * tp_pager_pages_inside() - the pages [*@first, *@last] of @t wholly
 * inside bytes [@off, @off + @len) (a page shared with bytes outside
 * stays out; the tensor's last page ends at its last byte). False: none.
 */
bool tp_pager_pages_inside(const struct tp_pager *pg,
			   const struct tp_tensor *t, size_t off, size_t len,
			   size_t *first, size_t *last);

/*
 * tp_pager_run_chunks() - the per-page handles of pages [@start, @start +
 * @n) of @t, in a buffer of the pager's, valid until its next call; NULL
 * when it cannot grow (ENOMEM).
 */
struct tp_chunk **tp_pager_run_chunks(struct tp_pager *pg,
				      const struct tp_tensor *t, size_t start,
				      size_t n);

/* --- acquire.c ------------------------------------------------------- */

/**
 * tp_pager_back_pages() - give fresh chunks to the pages of [@first,
 * @last] of @t that need one: UNBACKED and OFFLOADED pages, and EVICTED
 * ones when @discard (the caller overwrites them); with @prefetch, the
 * OFFLOADED ones only. OFFLOADED contents are copied back on the h2d
 * stream unless @discard; the compute stream waits on that copy, or with
 * @prefetch the pages stay RELOADING until it is seen complete.
 * Nothing is reclaimed here: the chunks must be free.
 * Return: 0, -ENOMEM, -EIO...; on failure nothing changed.
 */
int tp_pager_back_pages(struct tp_pager *pg, struct tp_tensor *t,
			size_t first, size_t last, bool discard, bool prefetch);

/**
 * tp_pager_prefetch_run() - ask the victim ops' prefetch_pick for
 * tensors to bring back now, and start their reloads.
 */
void tp_pager_prefetch_run(struct tp_pager *pg);

/* @t's policy prefetch is over (@ok: its pages came back). */
void tp_pager_prefetch_answer(struct tp_pager *pg, struct tp_tensor *t, bool ok);

/**
 * tp_pager_writeback() - copy @t's resident pages that host swap holds no
 * copy of into the swap cache, behind the compute issued so far; @t stays
 * resident and usable. Return: 0, -EBUSY (pinned or in flight), -ENOSPC
 * (no free host buffers: cached copies are never pushed out for it),
 * -EPERM (@t may not be offloaded).
 */
int tp_pager_writeback(struct tp_pager *pg, struct tp_tensor *t);

/**
 * tp_pager_writeback_run() - while the link to host is idle, ask the
 * victim ops' writeback_pick for a tensor to copy to the swap cache.
 */
void tp_pager_writeback_run(struct tp_pager *pg);

/* --- reclaim.c ------------------------------------------------------- */

/**
 * tp_pager_drop_swapped() - the OFFLOADED pages of [@first, @last] of @t
 * become EVICTED, their host swap freed: lineage regenerates them.
 */
void tp_pager_drop_swapped(struct tp_pager *pg, struct tp_tensor *t,
			   size_t first, size_t last);

/**
 * tp_pager_make_room_ahead() - room for @n chunks to prefetch @t into,
 * made only of victims the victim ops predict to be used after @t
 * (choose_ahead); never waits. Return 0, -EAGAIN when the room is still
 * on its way back (deferred unmaps), -ENOMEM when no victim qualifies
 * (what left already stays left).
 */
int tp_pager_make_room_ahead(struct tp_pager *pg, struct tp_tensor *t,
			     size_t n);

/**
 * tp_pager_make_room() - make @n chunks free in the pool: shrink the range
 * cache, then ask the victim ops, then wait for pending unmaps.
 * Return: 0, or -ENOMEM when they cannot be found (if the shortfall is
 * known up front, nothing is moved).
 */
int tp_pager_make_room(struct tp_pager *pg, size_t n);
/*
 * tp_pager_make_room_for() - tp_pager_make_room() for @n pages, all of
 * @whole where it is not NULL, a tensor that may take a cached range
 * (tp_range_cache_may_adopt()): then a range of its size, one a victim
 * just left say, is room enough.
 */
int tp_pager_make_room_for(struct tp_pager *pg, const struct tp_tensor *whole,
			   size_t n);

/**
 * tp_pager_watermark() - above pager.high_watermark, start releasing down
 * to pager.low_watermark (asynchronously: offloads only enqueue copies).
 */
void tp_pager_watermark(struct tp_pager *pg);

/* Make @t leave as @how: an offload moves it whole, an eviction at most
 * @most of its pages (SIZE_MAX: all). */
int tp_pager_leave(struct tp_pager *pg, struct tp_tensor *t, enum tp_leave how,
		   size_t most);

/* --- victim_lru.c ---------------------------------------------------- */

/* The default victim ops: LRU over candidates; offload, else evict. */
void tp_victim_lru_init(struct tp_pager *pg, struct tp_victim_ops *ops);

/* --- swap.c ---------------------------------------------------------- */

int tp_swap_init(struct tp_pager *pg, uint64_t budget_bytes,
		 uint64_t ahead_bytes);
void tp_swap_fini(struct tp_pager *pg);
/**
 * tp_swap_take() - @n host buffers into @out, all or none.
 * Return: 0, -ENOSPC (swap budget), -ENOMEM (host allocation).
 */
int tp_swap_take(struct tp_pager *pg, void **out, size_t n);
/*
 * Whether buffer @b directly follows @a within one block, so that one copy
 * may cover both. Blocks are separate host allocations, which may touch:
 * the driver refuses a copy whose host range spans two pinned ones
 * (CUDA_ERROR_INVALID_VALUE), so a run stops at a block's start.
 */
bool tp_swap_follows(const struct tp_pager *pg, const void *a, const void *b);
/* Buffers nothing reads or writes any more. */
void tp_swap_put(struct tp_pager *pg, void *const *bufs, size_t n);
/* A buffer free once @ev completes (takes its own reference). */
void tp_swap_put_after(struct tp_pager *pg, void *buf, struct tp_event *ev);
/* Recycle deferred buffers whose events completed; @wait blocks on all. */
void tp_swap_reap(struct tp_pager *pg, bool wait);
/* Buffers that could still be taken now (after reaping), counting the
 * swap cache's, which an offload drops for room. */
size_t tp_swap_room(struct tp_pager *pg);
/* Buffers free now without dropping cached copies (SIZE_MAX: no limit). */
size_t tp_swap_room_free(struct tp_pager *pg);

/* --- range_cache.c --------------------------------------------------- */

/**
 * tp_range_cache_put() - keep @t's fully resident range for reuse.
 * Return: true when taken (the pages' chunks now belong to the cache).
 */
bool tp_range_cache_put(struct tp_pager *pg, struct tp_tensor *t);
/**
 * tp_range_cache_put_dead() - fake deletion through the cache: a freed
 * tensor lineage keeps gives its fully resident range to the cache, and
 * its pages become EVICTED with no range (as a dropped one), instead of
 * being unmapped for the next tensor of its size to map again.
 */
bool tp_range_cache_put_dead(struct tp_pager *pg, struct tp_tensor *t);
/**
 * tp_range_cache_get() - a cached range of exactly @nr_pages into @t
 * (va set, pages RESIDENT). Return: true on a hit.
 */
bool tp_range_cache_get(struct tp_pager *pg, struct tp_tensor *t);
/* Unmap and release the oldest cached range. Return: chunks freed or 0. */
/**
 * tp_range_cache_put_evicted() - evict @t, resident whole, by moving its
 * range, mapped, into the cache (pager.move_evicted): the next tensor of
 * its size takes it with no driver call. @t keeps no address until it
 * comes back. False where @t may not move (its address was given to the
 * user, it is pinned or in flight...): evict it the usual way.
 */
bool tp_range_cache_put_evicted(struct tp_pager *pg, struct tp_tensor *t);
/**
 * tp_range_cache_adopt() - back the whole of @t, which may take a range
 * (tp_range_cache_may_adopt(): none of its pages hold data on the device
 * or in host swap...), with a cached range of its size in place of its
 * own. False where none is there.
 */
bool tp_range_cache_adopt(struct tp_pager *pg, struct tp_tensor *t);
/**
 * tp_range_cache_rescue() - give @t, moved out of its range by an
 * eviction, that range back while no one has taken it: its bytes are
 * still there. Return: the pages rescued (all of @t's, or 0).
 */
size_t tp_range_cache_rescue(struct tp_pager *pg, struct tp_tensor *t);
/* Whether @t may take a cached range; whether one of its size is there
 * (its own first). */
bool tp_range_cache_may_adopt(const struct tp_pager *pg,
			      const struct tp_tensor *t);
bool tp_range_cache_holds(struct tp_pager *pg, const struct tp_tensor *t);
/* Whether tp_range_cache_put_evicted() would move @t, evicted whole. */
bool tp_range_cache_movable(const struct tp_pager *pg,
			    const struct tp_tensor *t);
/*
 * tp_range_cache_fits_room() - whether @t is of the page count of the
 * tensor free_chunks() makes room for (pg->room_for) and may move: its
 * range, evicted whole, is that room.
 */
bool tp_range_cache_fits_room(const struct tp_pager *pg,
			      const struct tp_tensor *t);
/* tp_range_cache_forget() - @t goes: its moved range is free memory. */
void tp_range_cache_forget(struct tp_tensor *t);
size_t tp_range_cache_shrink(struct tp_pager *pg);
void tp_range_cache_fini(struct tp_pager *pg);

/* --- slab.c ---------------------------------------------------------- */

void tp_slab_init(struct tp_pager *pg, double fraction);
/* Whether a tensor of @bytes goes into a slab. */
bool tp_slab_fits(const struct tp_pager *pg, size_t bytes);
/* Place @t in a slot; may make room for a new slab chunk. */
int tp_slab_alloc(struct tp_pager *pg, struct tp_tensor *t);
void tp_slab_free(struct tp_pager *pg, struct tp_tensor *t);
/* Release one idle slab chunk. Return: chunks freed or 0. */
size_t tp_slab_shrink(struct tp_pager *pg);
void tp_slab_fini(struct tp_pager *pg);

/* --- lookup.c -------------------------------------------------------- */

int tp_lookup_init(struct tp_pager *pg);
void tp_lookup_fini(struct tp_pager *pg);
/* Address table nodes of a range of @nr_pages chunks: one per granule. */
static inline size_t tp_lookup_nodes(const struct tp_pager *pg,
				     size_t nr_pages)
{
	size_t gran = pg->vmm->va_align;

	return (nr_pages * pg->chunk + gran - 1) / gran;
}
/* Publish/withdraw every granule of @t (slab tensors: no-op). */
void tp_lookup_add_tensor(struct tp_pager *pg, struct tp_tensor *t);
void tp_lookup_del_tensor(struct tp_pager *pg, struct tp_tensor *t);
void tp_lookup_add_slab(struct tp_pager *pg, struct tp_slab *s);
void tp_lookup_del_slab(struct tp_pager *pg, struct tp_slab *s);

#endif /* TP_PAGER_PAGER_INT_H */
