/* SPDX-License-Identifier: MIT */
/*
 * The physical chunk pool: a fixed budget of chunks whose backend handles
 * are created lazily, up to the budget, and then recycled for the life of
 * the vmm. Nothing on the hot path asks the driver for new memory once a
 * handle exists.
 */
#ifndef TP_VMM_CHUNK_POOL_H
#define TP_VMM_CHUNK_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "vmm/vmm.h"

/* tp_chunk.flags */
#define TP_CHUNK_CREATED	(1u << 0)	/* backend handle exists */
#define TP_CHUNK_FREE		(1u << 1)	/* on the free list */
#define TP_CHUNK_PENDING	(1u << 2)	/* free, fenced by a copy */
/* Its backend handle is the driver thread's to create, before the map
 * that first needs it and after the releases queued before it
 * (vmm.map_ahead, extent_pool.c). */
#define TP_CHUNK_UNBORN		(1u << 3)

struct tp_chunk_pool {
	struct tp_chunk *chunks;	/* nr of them, index order */
	size_t nr;			/* budget */
	size_t created;			/* handles made: chunks[0..created) */
	size_t nfree;			/* created and on the free list */
	struct tp_chunk *free_list;
	/* vmm.mode = contiguous: free runs instead of the free list, and
	 * handles created lazily at any index (TP_CHUNK_CREATED says). */
	struct tp_contig_pool *contig;
	/* vmm.mapping = extents: handles sized to their runs instead
	 * (extent_pool.c); @chunks is then unused. */
	struct tp_extent_pool *ext;
};

/**
 * tp_chunk_pool_new() - a pool of @nr chunks, no handle created yet: one
 * handle per chunk, or with @extents handles of up to @max_pages chunks
 * sized to the runs they back, re-carved with @headroom chunks to
 * release behind (extent_pool.h).
 * Return: the pool, or NULL with errno set (ENOMEM).
 */
struct tp_chunk_pool *tp_chunk_pool_new(size_t nr, bool extents,
					size_t max_pages, size_t headroom);

/**
 * tp_chunk_pool_free() - destroy every created handle and the pool.
 * Chunks still taken are reported and destroyed too: the caller has
 * unmapped everything by then.
 */
void tp_chunk_pool_free(struct tp_vmm *vmm, struct tp_chunk_pool *pool);

/**
 * tp_chunk_pool_take() - the backing of a run of @n pages into @out, one
 * entry per page: on the chunked pool @n chunks, recycled ones first,
 * then new handles up to the budget; on the extent pool handles sized to
 * the run (tp_extent_pool_take()).
 * Return: 0; -ENOMEM when fewer than @n are available (nothing taken);
 * the backend's error when a handle cannot be created (nothing taken,
 * handles made so far stay in the pool for later).
 */
int tp_chunk_pool_take(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
		       struct tp_chunk **out, size_t n);

/**
 * tp_chunk_pool_take_side() - tp_chunk_pool_take(); on a contiguous pool
 * the @n chunks are one run of consecutive indices, best fit, from end
 * @side, and -ENOMEM also means no free run is long enough.
 */
int tp_chunk_pool_take_side(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
			    struct tp_chunk **out, size_t n,
			    enum tp_pool_side side);

/**
 * tp_chunk_pool_set_contiguous() - switch a pool nothing was taken from to
 * contiguous runs. Return: 0, -EBUSY, -ENOMEM.
 */
int tp_chunk_pool_set_contiguous(struct tp_chunk_pool *pool);

/** tp_chunk_pool_put() - return a per-page array of @n taken entries. */
void tp_chunk_pool_put(struct tp_chunk_pool *pool, struct tp_chunk *const *c,
		       size_t n);

/** tp_chunk_pool_available() - chunks a take could get now. */
/*
 * Take the free handle @c off the free lists for its old owner (a
 * rescue, vmm.mapping = extents).
 */
void tp_chunk_pool_reclaim(struct tp_chunk_pool *pool, struct tp_chunk *c);

size_t tp_chunk_pool_available(const struct tp_chunk_pool *pool);
/** tp_chunk_pool_pending() - and those fenced by copies in flight. */
size_t tp_chunk_pool_pending(const struct tp_chunk_pool *pool);

#endif /* TP_VMM_CHUNK_POOL_H */
