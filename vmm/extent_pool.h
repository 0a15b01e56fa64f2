/* SPDX-License-Identifier: MIT */
/*
 * The extent pool (vmm.mapping = extents): physical handles sized to the
 * runs of pages they back, within a budget of chunks. The driver charges
 * per handle, not per byte (DESIGN.md, "Backends"), so a tensor backed by
 * one handle of its size is mapped and unmapped for the price of one
 * chunk. A handle maps whole, so it cannot be cut: when no free handle
 * has the size a run needs and the budget has no room for a new one,
 * free handles are released to make that room (re-carving). Free memory
 * is never lost to the shape of what is free: a take of n chunks fails
 * only when fewer than n are free in all.
 */
#ifndef TP_VMM_EXTENT_POOL_H
#define TP_VMM_EXTENT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <urcu/list.h>

#include "vmm/vmm.h"

#define TP_EXTENT_BUCKETS	64

/* A handle holds at most this fraction of the budget (vmm.extent_max). */
#define TP_EXTENT_SHARE		32

/* A free range [start, start + len) of the backend's offset space. */
struct tp_extent_hole {
	size_t start, len;
};

struct tp_extent_pool {
	size_t budget;			/* chunks */
	size_t max_pages;		/* largest handle, chunks */
	size_t created;			/* chunks in live handles */
	size_t nfree;			/* chunks in free handles */
	/*
	 * Of those, chunks whose fence is a copy still in flight (an
	 * offload reading what they held): a taker's compute would wait for
	 * it, so they go last, and the pager may prefer another victim.
	 */
	size_t npend;
	struct cds_list_head pend;
	size_t handles;			/* live handles */
	/*
	 * Chunks of handles released behind (re-carving on the driver
	 * thread), out of the budget but not yet of device memory, and
	 * how many may be so beyond the budget (vmm.release_behind).
	 */
	size_t dying, headroom;
	/* Chunks of handles the driver thread is still to make. */
	size_t unborn;
	/* Free handles: oldest first for re-carving, and by size; taken
	 * handles on a list of their own, so that close finds them. */
	struct cds_list_head lru;
	struct cds_list_head taken;
	struct cds_list_head by_size[TP_EXTENT_BUCKETS];
	/*
	 * Where each handle lies in the backend's offset space (the host
	 * backend's memfd): first fit over the holes, else past the top.
	 * Released handles leave holes; the space never holds more than
	 * the budget and the headroom at once.
	 */
	struct tp_extent_hole *holes;	/* offset order, never adjacent */
	size_t nholes, cap_holes;
	size_t top;
};

/**
 * tp_extent_pool_new() - a pool of @budget chunks whose handles hold at
 * most @max_pages chunks (0: no limit), and whose re-carving may leave
 * @headroom chunks beyond the budget to a driver thread to release. No
 * handle is created yet.
 * Return: the pool, or NULL with errno set.
 */
struct tp_extent_pool *tp_extent_pool_new(size_t budget, size_t max_pages,
					  size_t headroom);

/**
 * tp_extent_pool_free() - release every handle and the pool. Handles
 * still taken are reported and released too: the caller has unmapped
 * everything by then.
 */
void tp_extent_pool_free(struct tp_vmm *vmm, struct tp_extent_pool *ep);

/**
 * tp_extent_pool_take() - back a run of @n consecutive pages: handles of
 * at most max_pages chunks whose sizes add up to @n, each repeated in
 * @out once per page it backs (@out has @n entries, in page order).
 * A free handle of the size wanted is reused; else one is created, after
 * releasing free handles, oldest first, when the budget has no room
 * (behind, on the driver thread, while the headroom holds them);
 * a pending handle (fenced by a copy) is taken only when nothing else
 * will do. Return: 0; -ENOMEM when fewer than @n chunks are free, pending
 * ones included (nothing taken); the backend's error when a handle cannot
 * be created (nothing taken).
 */
int tp_extent_pool_take(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			struct tp_chunk **out, size_t n);

/**
 * tp_extent_pool_put() - return the handles of a per-page array of @n
 * entries (each handle repeated once per page, as take gave them).
 */
void tp_extent_pool_put(struct tp_extent_pool *ep, struct tp_chunk *const *c,
			size_t n);

/**
 * tp_extent_pool_reclaim() - take the free handle @c off the free lists,
 * as a take would: its old owner has it back (a rescue).
 */
void tp_extent_pool_reclaim(struct tp_extent_pool *ep, struct tp_chunk *c);

/**
 * tp_extent_pool_available() - chunks a take could get now without a
 * stream waiting on a copy; tp_extent_pool_pending() those it could get
 * besides (fenced by copies in flight).
 */
size_t tp_extent_pool_available(const struct tp_extent_pool *ep);

/*
 * tp_extent_pool_born() - the driver thread made @c's handle (it was
 * TP_CHUNK_UNBORN): it holds device memory now, beside @dying chunks of
 * handles released but not yet gone then. Lock held.
 */
void tp_extent_pool_born(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			 struct tp_chunk *c, size_t dying);
size_t tp_extent_pool_pending(const struct tp_extent_pool *ep);

/**
 * tp_extent_pool_refresh() - free handles whose copy fence completed are
 * no longer pending. Return: chunks that came free so.
 */
size_t tp_extent_pool_refresh(struct tp_vmm *vmm, struct tp_extent_pool *ep);

#endif /* TP_VMM_EXTENT_POOL_H */
