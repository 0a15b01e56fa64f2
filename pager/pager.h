/* SPDX-License-Identifier: MIT */
/*
 * The pager's internal API: what lineage/, policy/, ctx/ and the public
 * wrappers call. Public tp_tensor_* functions are thin wrappers over these.
 */
#ifndef TP_PAGER_PAGER_H
#define TP_PAGER_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tpager.h"
#include "base/log.h"
#include "pager/hooks.h"
#include "pager/tensor.h"

struct tp_pager;
struct tp_tracer;
struct tp_vmm;

/*
 * The pager's options, resolved to bytes by its creator (ctx/ from the
 * pager.* keys). Those after run_time may change while it runs
 * (tp_pager_set_conf(), from tp_ctl_set).
 */
struct tp_pager_conf {
	uint64_t budget;		/* pager.budget, bytes */
	uint64_t host_budget;		/* pager.host_budget (0: the host's) */
	uint64_t swap_ahead;		/* pager.swap_ahead, bytes */
	double slab_fraction;		/* pager.slab_fraction */
	bool swap_cache;		/* pager.swap_cache */
	bool contiguous;		/* vmm.mode = contiguous */
	/* run_time: */
	bool range_cache;		/* pager.range_cache */
	bool range_cache_freed;		/* pager.range_cache_freed */
	bool move_evicted;		/* pager.move_evicted */
	uint64_t range_cache_max;	/* pager.range_cache_max, bytes */
	bool rescue;			/* pager.rescue */
	int64_t work_limit;		/* pager.work_limit */
	double high_watermark;		/* pager.high_watermark, percent */
	double low_watermark;		/* pager.low_watermark, percent */
};


/* Internal acquire modes, beyond TP_READ and TP_WRITE. */
/* Fail with -ESTALE instead of regenerating EVICTED pages (lineage's work
 * stack regenerates them itself, without recursion). */
#define TP_ACQ_NO_REGEN		(1u << 8)
/* Do not make room by evicting or offloading (prefetch). */
#define TP_ACQ_NO_RECLAIM	(1u << 9)

/*
 * tp_pager_create() - a pager over @vmm with the options @pc (copied),
 * telling @tracer (may be NULL) what it moves and @errors what fails: the
 * pool of pc->budget bytes, host swap of pc->host_budget. NULL with errno
 * on failure.
 */
struct tp_pager *tp_pager_create(struct tp_vmm *vmm, struct tp_tracer *tracer,
				 const struct tp_pager_conf *pc,
				 const struct tp_errors *errors);
/* tp_pager_set_conf() - the run-time options of @pc from now on. */
void tp_pager_set_conf(struct tp_pager *pg, const struct tp_pager_conf *pc);
/* Wait for every copy, free every tensor and cached range. */
void tp_pager_destroy(struct tp_pager *pg);

/* Install the callbacks (NULL restores the default). */
void tp_pager_set_victim_ops(struct tp_pager *pg, const struct tp_victim_ops *ops);
void tp_pager_set_regen_ops(struct tp_pager *pg, const struct tp_regen_ops *ops);
/* Offer every candidate to the victim ops again (del, then add): they
 * changed what they keep (a new director). */
void tp_pager_offer_cands(struct tp_pager *pg);

/* The live tensor containing @addr, or NULL. Any thread. */
struct tp_tensor *tp_lookup(struct tp_pager *pg, uintptr_t addr);

/* A new tensor with one reference (the caller's). NULL with errno. */
struct tp_tensor *tp_pager_tensor_new(struct tp_pager *pg, size_t bytes,
				      unsigned flags);

/*
 * Make bytes [@off, @off+@len) resident and pin them. @mode: TP_READ,
 * TP_WRITE (pages that are not resident and are only written are backed
 * by fresh chunks without reload or regeneration), TP_ACQ_*.
 * On success *@addr is the device address of byte @off.
 * Return 0, -ENOMEM (nothing could leave; state unchanged), -ESTALE
 * (TP_ACQ_NO_REGEN and a page is EVICTED), -EIO, TP_E*.
 */
int tp_pager_acquire(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		     size_t len, unsigned mode, void **addr);
int tp_pager_release(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		     size_t len);
/*
 * tp_pager_user_acquire() - tp_pager_acquire() for the user: for a write,
 * lineage lets go of @t's contents first (tp_regen_ops.on_write).
 */
int tp_pager_user_acquire(struct tp_pager *pg, struct tp_tensor *t,
			  size_t off, size_t len, unsigned mode, void **addr);
/*
 * tp_pager_address_given() - the user holds @t's address (an acquire of
 * the API returned it): @t stays at it for good, never moved out of its
 * range by an eviction (pager.move_evicted).
 */
void tp_pager_address_given(struct tp_tensor *t);

/*
 * tp_pager_note_use() - with ordered reuse, remember that the work issued
 * so far may use @t: its pages leave behind an event after it (called at
 * each release). tp_pager_user_work(): the caller may have issued work
 * on the compute stream that the pager did not see (a user's release),
 * so the next use is recorded afresh.
 */
void tp_pager_note_use(struct tp_pager *pg, struct tp_tensor *t);
void tp_pager_user_work(struct tp_pager *pg);

/*
 * tp_pager_touch() - @t, pinned, was accessed now: an op issued on it has
 * finished writing it (lineage's tp_op_run, on its outputs). Its
 * staleness counts from now, as DTR's clock counts a new tensor's from
 * the end of the op that made it; the release that follows re-offers it.
 */
void tp_pager_touch(struct tp_pager *pg, struct tp_tensor *t);

int tp_pager_offload(struct tp_pager *pg, struct tp_tensor *t);
int tp_pager_evict(struct tp_pager *pg, struct tp_tensor *t);
/*
 * Evict at most @most of @t's resident pages (a partial eviction: the
 * rest stay resident, and the next acquire regenerates the tensor whole).
 */
int tp_pager_evict_part(struct tp_pager *pg, struct tp_tensor *t, size_t most);
/*
 * Whether an op that does not fit whole may run in parts (the victim
 * ops' split, never on the contiguous pool); tp_pager_note_split()
 * counts one such run of @parts.
 */
bool tp_pager_split_allowed(struct tp_pager *pg);
void tp_pager_note_split(struct tp_pager *pg, unsigned parts);
/* An op replayed on a part's rows alone (lineage/regen_rows.c). */
void tp_pager_note_rows(struct tp_pager *pg);
/* Whether the policy sends tensors to host swap at all. */
bool tp_pager_policy_swaps(const struct tp_pager *pg);
/*
 * tp_pager_room_pages() - how many chunks demands could have at most now:
 * the pool less the pages of tensors someone pins (a count the pager
 * keeps as pins and pages move).
 */
size_t tp_pager_room_pages(struct tp_pager *pg);
/*
 * tp_pager_moves_into_room() - whether @t, evicted now, would leave its
 * range as the room being made: that room is for one tensor of @t's page
 * count which may take a range (pager.move_evicted), and @t, resident
 * whole, may move. Neither then calls the driver: the other takes @t's
 * range as it is mapped.
 */
bool tp_pager_moves_into_room(const struct tp_pager *pg,
			      const struct tp_tensor *t);
/*
 * tp_pager_fits_now() - whether @n more chunks can be backed now without
 * making room: the pool's free chunks once completed work is reaped.
 * Unlike tp_pager_room_pages(), what others hold unpinned counts as taken.
 */
bool tp_pager_fits_now(struct tp_pager *pg, size_t n);
/*
 * tp_pager_handle_max() - the most pages one physical handle backs: pages
 * leave by whole handles (1 with vmm.mapping = chunks).
 */
size_t tp_pager_handle_max(const struct tp_pager *pg);
/* Resident pages of @t someone pins. */
size_t tp_pager_pinned_pages(const struct tp_tensor *t);
/* Chunks of the pages [@off, @off + @len) of @t covers. */
size_t tp_pager_span_pages(struct tp_pager *pg, size_t off, size_t len);
/* Pages a new tensor of @bytes would take: 0 when a slab would hold it. */
size_t tp_pager_pages_for(const struct tp_pager *pg, size_t bytes);

/*
 * Evict the pages of @t wholly inside [@off, @off + @len) that no one
 * pins, while other pages may be pinned (a split op done with them).
 * -EPERM when @t cannot be evicted.
 */
int tp_pager_evict_range(struct tp_pager *pg, struct tp_tensor *t, size_t off,
			 size_t len);
int tp_pager_prefetch(struct tp_pager *pg, struct tp_tensor *t);

/*
 * True when any page of @t is EVICTED / not resident. Inline: c_r's walks
 * over the evicted ancestry ask it of every tensor they meet.
 */
static inline bool tp_pager_has_evicted(const struct tp_tensor *t)
{
	return t->evicted_pages > 0;
}

static inline bool tp_pager_is_resident(const struct tp_tensor *t)
{
	return t->resident_pages == t->nr_pages;
}
/* Pages of @t EVICTED now: what regenerating it brings back. */
static inline size_t tp_pager_evicted_pages(const struct tp_tensor *t)
{
	return t->evicted_pages;
}
/* True once the user freed @t (its struct may live on for lineage). */
bool tp_pager_is_freed(const struct tp_tensor *t);
/*
 * tp_pager_hold_rows() - with @hold, @t leaves by offload only until as
 * many calls without: an op run in parts reads its rows one part at a
 * time (TP_OP_SPLIT_LOCAL), and an unread row evicted would bring the
 * whole tensor back by regeneration, where one in host swap comes back
 * alone.
 */
void tp_pager_hold_rows(struct tp_pager *pg, struct tp_tensor *t, bool hold);
/*
 * tp_pager_rows_done() - bytes [@off, @off + @len) of @t, which an op in
 * parts has read (or, @written, written and will not touch again), leave
 * now: the whole handles inside them that no one pins. Rows read are
 * evicted, or offloaded where the victim ops say so (rows_offload) or
 * @t cannot be regenerated; rows written are offloaded. Return: 0, or
 * -errno with those that could not leave still resident (-EPERM: they
 * can do neither, -ENOSPC: host swap is full).
 */
int tp_pager_rows_done(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		       size_t len, bool written);
/* Whether the rows of @t an op in parts has read go to host swap. */
bool tp_pager_rows_offloaded(struct tp_pager *pg, const struct tp_tensor *t);
/*
 * tp_pager_offload_range() - offload the whole handles of @t inside bytes
 * [@off, @off + @len) that are resident and unpinned, the rest of @t as
 * it is (pinned or not). Return: 0, -EINVAL (a range outside @t),
 * -EPERM (@t never goes to host swap, or the pool is contiguous),
 * -ENOSPC (host swap full), -ENOMEM.
 */
int tp_pager_offload_range(struct tp_pager *pg, struct tp_tensor *t,
			   size_t off, size_t len);
/* Whether @t may go to host swap at all (not slab, scratch or pinned to
 * the device by its flags). */
bool tp_pager_can_offload(const struct tp_tensor *t);
/* Pages host swap could take now, its cached copies dropped for room. */
size_t tp_pager_swap_room_pages(struct tp_pager *pg);

/*
 * tp_pager_leave_flags() - @t's flags as a policy must read them: with
 * TP_EVICT_PINNED while its rows are held.
 */
unsigned tp_pager_leave_flags(const struct tp_tensor *t);

/*
 * Pages of @t whose contents are, or are on their way to be, in host swap
 * alone (OFFLOADED, OFFLOADING: their chunks go when the copy lands).
 */
size_t tp_pager_swapped_pages(const struct tp_tensor *t);
/* Pages of @t in bytes [@off, @off + @len) that need a chunk to be read. */
size_t tp_pager_missing_pages(const struct tp_pager *pg,
			      const struct tp_tensor *t, size_t off,
			      size_t len);

/* True when @t is packed in a slab chunk: never paged out or evicted. */
bool tp_pager_in_slab(const struct tp_tensor *t);

/*
 * References: the user holds one until tp_tensor_free(); lineage takes its
 * own for records that still need a tensor (fake deletion). The last put
 * releases memory and the struct (after an RCU grace period for lookups).
 */
void tp_pager_tensor_get(struct tp_tensor *t);
void tp_pager_tensor_put(struct tp_pager *pg, struct tp_tensor *t);
/* The user's tp_tensor_free(): drops memory at once if lineage does not
 * need the contents, and the user's reference. */
int tp_pager_tensor_free(struct tp_pager *pg, struct tp_tensor *t);

/*
 * Exchange the identities of @a and @b: their virtual ranges, pages and
 * page states (and the address lookup). Used by recomputable in-place
 * ops: the output takes the input's pages at the input's address, the
 * input's old version moves to the other range. Both must be unpinned.
 */
int tp_pager_swap_identity(struct tp_pager *pg, struct tp_tensor *a,
			   struct tp_tensor *b);
/* Mark every page of @t EVICTED (contents dropped, chunks returned). Used
 * for an in-place input's old version; unlike evict, needs no regen check. */
int tp_pager_drop_contents(struct tp_pager *pg, struct tp_tensor *t);

/* Device memory accounting for the policy and the watermarks. */
uint64_t tp_pager_budget_bytes(const struct tp_pager *pg);
uint64_t tp_pager_used_bytes(const struct tp_pager *pg);

/**
 * tp_pager_copy_backlog() - bytes of copies to host (@d2h) or from it
 * still in flight, as last polled: what a new copy queues behind.
 */
uint64_t tp_pager_copy_backlog(const struct tp_pager *pg, bool d2h);

/* Global access counter, advanced by each acquire (policy staleness). */
uint64_t tp_pager_access_seq(const struct tp_pager *pg);

/*
 * The runs of consecutive chunk indices behind @t's RESIDENT pages, in
 * page order, each through @fn (chunk_runs.c); slab tensors have none.
 * @t keeps them until its pages move.
 * Return: the number of runs.
 */
size_t tp_pager_chunk_runs(struct tp_tensor *t,
			   void (*fn)(void *arg, const struct tp_tensor *t,
				      size_t start, size_t len),
			   void *arg);

/* Observe every copy that completed (after tp_vmm_sync_all: all). */
void tp_pager_sync(struct tp_pager *pg);

/* Fill the pager's and vmm's part of @st. */
void tp_pager_stats(struct tp_pager *pg, struct tp_stats *st);

/* Compute time of the program's own ops so far (tp_stats.compute_ns). */
uint64_t tp_pager_compute_ns(const struct tp_pager *pg);
/* Recompute time so far (tp_stats.recompute_ns), read without polling. */
uint64_t tp_pager_recompute_ns(const struct tp_pager *pg);

/*
 * tp_pager_reload_counts() - reloads so far (*@reloads), and of them the
 * prefetches whose tensor was back before its use (*@in_time).
 */
void tp_pager_reload_counts(const struct tp_pager *pg, uint64_t *reloads,
			    uint64_t *in_time);

/*
 * tp_pager_lost_ns() - time lost to paging so far: waits on copies and
 * chunks (stall) and regenerating evicted tensors (recompute).
 */
uint64_t tp_pager_lost_ns(const struct tp_pager *pg);

/* Counted events reported to stats by the layers above. */
void tp_pager_note_recompute(struct tp_pager *pg, uint64_t ns);
void tp_pager_note_compute(struct tp_pager *pg, uint64_t ns);

/*
 * Paging work (pager.work_limit, work.c). tp_pager_work_begin() and
 * tp_pager_work_end() bracket a request: an acquire, a room-making, a
 * tp_op_run; they nest, and the outermost pair is the request.
 * tp_pager_work_iteration() says an iteration begins (@begin) or ends:
 * the iteration's bound holds only in between.
 */
void tp_pager_work_begin(struct tp_pager *pg);
void tp_pager_work_end(struct tp_pager *pg);
void tp_pager_work_iteration(struct tp_pager *pg, bool begin);
/* Recompute time since the iteration began (or the pager was made). */
uint64_t tp_pager_iter_recompute_ns(const struct tp_pager *pg);
/*
 * tp_pager_work_retry() - the request under way starts a retry that is
 * bounded otherwise (a regeneration let its pins go, at most
 * TP_LIN_MAX_DROPS times): its count starts afresh, the iteration's not.
 */
void tp_pager_work_retry(struct tp_pager *pg);
/**
 * tp_pager_work() - charge @units of paging work (ops replayed, victims
 * chosen, candidates scored to choose them, copies started) to the
 * request under way and the iteration.
 * @demand: the work is for a demand, whose failure is an error to report
 * (on the context, naming pager.work_limit); false for work ahead of
 * need, which stops quietly.
 * Return: 0, or -TP_EWORK once the request or the iteration is past its
 * bound (and for the rest of a request that was stopped): the caller
 * does no more and unwinds, leaving every tensor as it is.
 */
int tp_pager_work(struct tp_pager *pg, unsigned units, bool demand);

/*
 * A replay of recorded ops (a regeneration) begins or ends: acquisitions
 * in between are the replay's, not the program's, and tp_pager_replaying()
 * says so to the victim ops' on_acquire.
 */
void tp_pager_replay_begin(struct tp_pager *pg);
void tp_pager_replay_end(struct tp_pager *pg);
bool tp_pager_replaying(const struct tp_pager *pg);

#endif /* TP_PAGER_PAGER_H */
