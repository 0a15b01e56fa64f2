/* SPDX-License-Identifier: MIT */
/*
 * The chunk pool: a budget of chunks, handles created lazily and recycled.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/contig_pool.h"
#include "vmm/extent_pool.h"

struct tp_chunk_pool *tp_chunk_pool_new(size_t nr, bool extents,
					size_t max_pages, size_t headroom)
{
	struct tp_chunk_pool *pool;
	size_t i;

	if (!nr) {
		errno = EINVAL;
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->nr = nr;
	if (extents) {
		pool->ext = tp_extent_pool_new(nr, max_pages, headroom);
		if (!pool->ext) {
			free(pool);
			return NULL;
		}
		return pool;
	}
	pool->chunks = calloc(nr, sizeof(*pool->chunks));
	if (!pool->chunks) {
		free(pool);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < nr; i++) {
		pool->chunks[i].index = (uint32_t)i;
		pool->chunks[i].pages = 1;
	}
	return pool;
}

void tp_chunk_pool_free(struct tp_vmm *vmm, struct tp_chunk_pool *pool)
{
	size_t i;

	if (!pool)
		return;
	if (pool->ext) {
		tp_extent_pool_free(vmm, pool->ext);
		free(pool);
		return;
	}
	if (pool->contig) {
		if (pool->contig->nfree != pool->nr)
			tp_log(TP_LOG_WARN, "vmm: %zu chunks still taken at close",
			       pool->nr - pool->contig->nfree);
		for (i = 0; i < pool->nr; i++)
			if (pool->chunks[i].flags & TP_CHUNK_CREATED)
				tp_vmm_do_chunk_destroy(vmm, &pool->chunks[i]);
		tp_contig_pool_free(pool->contig);
		free(pool->chunks);
		free(pool);
		return;
	}
	if (pool->nfree != pool->created)
		tp_log(TP_LOG_WARN, "vmm: %zu chunks still taken at close",
		       pool->created - pool->nfree);
	for (i = 0; i < pool->created; i++)
		tp_vmm_do_chunk_destroy(vmm, &pool->chunks[i]);
	free(pool->chunks);
	free(pool);
}

size_t tp_chunk_pool_available(const struct tp_chunk_pool *pool)
{
	if (pool->ext)
		return tp_extent_pool_available(pool->ext);
	if (pool->contig)
		return pool->contig->nfree;
	return pool->nfree + (pool->nr - pool->created);
}

static struct tp_chunk *pop_free(struct tp_chunk_pool *pool)
{
	struct tp_chunk *c = pool->free_list;

	pool->free_list = c->next;
	c->next = NULL;
	c->flags &= ~TP_CHUNK_FREE;
	pool->nfree--;
	return c;
}

static void push_free(struct tp_chunk_pool *pool, struct tp_chunk *c)
{
	c->flags |= TP_CHUNK_FREE;
	c->next = pool->free_list;
	pool->free_list = c;
	pool->nfree++;
}

size_t tp_chunk_pool_pending(const struct tp_chunk_pool *pool)
{
	return pool->ext ? tp_extent_pool_pending(pool->ext) : 0;
}

int tp_chunk_pool_set_contiguous(struct tp_chunk_pool *pool)
{
	if (pool->contig)
		return 0;
	if (pool->created || pool->ext)
		return -EBUSY;
	pool->contig = tp_contig_pool_new(pool->nr);
	if (!pool->contig)
		return -ENOMEM;
	for (size_t i = 0; i < pool->nr; i++)
		pool->chunks[i].flags = TP_CHUNK_FREE;
	return 0;
}

/* One run of @n consecutive chunks; handles made on first use. */
static int take_run(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
		    struct tp_chunk **out, size_t n, enum tp_pool_side side)
{
	size_t start, i;
	int ret;

	ret = tp_contig_pool_take(pool->contig, n, side, &start);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct tp_chunk *c = &pool->chunks[start + i];

		if (c->flags & TP_CHUNK_CREATED)
			continue;
		ret = tp_vmm_do_chunk_create(vmm, c, true);
		if (ret) {
			/* Handles made so far stay for later. */
			tp_contig_pool_put(pool->contig, start, n);
			vmm->stats.chunks_created = pool->created;
			vmm->stats.handles = vmm->stats.handles_created = pool->created;
			return ret;
		}
		c->flags |= TP_CHUNK_CREATED;
		pool->created++;
	}
	for (i = 0; i < n; i++) {
		pool->chunks[start + i].flags &= ~TP_CHUNK_FREE;
		out[i] = &pool->chunks[start + i];
	}
	vmm->stats.chunks_created = pool->created;
	vmm->stats.handles = vmm->stats.handles_created = pool->created;
	return 0;
}

int tp_chunk_pool_take(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
		       struct tp_chunk **out, size_t n)
{
	return tp_chunk_pool_take_side(vmm, pool, out, n, TP_SIDE_LEFT);
}

int tp_chunk_pool_take_side(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
			    struct tp_chunk **out, size_t n,
			    enum tp_pool_side side)
{
	size_t recycled, fresh, i;
	int ret;

	if (pool->ext)
		return tp_extent_pool_take(vmm, pool->ext, out, n);
	if (pool->contig)
		return take_run(vmm, pool, out, n, side);
	recycled = n < pool->nfree ? n : pool->nfree;
	fresh = n - recycled;
	if (n > tp_chunk_pool_available(pool))
		return -ENOMEM;
	/*
	 * Create the new handles first: if the backend fails half way, what
	 * was made goes on the free list for later and nothing is taken.
	 */
	for (i = 0; i < fresh; i++) {
		struct tp_chunk *c = &pool->chunks[pool->created + i];

		ret = tp_vmm_do_chunk_create(vmm, c, true);
		if (ret)
			goto err_keep;
		c->flags = TP_CHUNK_CREATED;
	}
	for (i = 0; i < recycled; i++)
		out[i] = pop_free(pool);
	/* New chunks in index order: adjacent handles map in one go (host). */
	for (i = 0; i < fresh; i++)
		out[recycled + i] = &pool->chunks[pool->created + i];
	pool->created += fresh;
	vmm->stats.chunks_created = pool->created;
	vmm->stats.handles = vmm->stats.handles_created = pool->created;
	return 0;

err_keep:
	while (i--) {
		push_free(pool, &pool->chunks[pool->created]);
		pool->created++;
	}
	vmm->stats.chunks_created = pool->created;
	vmm->stats.handles = vmm->stats.handles_created = pool->created;
	return ret;
}

/* Contiguous pool: give back each run of consecutive indices in one put. */
static void put_runs(struct tp_chunk_pool *pool, struct tp_chunk *const *c,
		     size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		if (c[i]->flags & TP_CHUNK_FREE) {
			tp_log(TP_LOG_ERROR, "vmm: chunk %u returned twice",
			       c[i]->index);
			i++;
			continue;
		}
		c[i]->flags |= TP_CHUNK_FREE;
		while (j < n && c[j]->index == c[j - 1]->index + 1 &&
		       !(c[j]->flags & TP_CHUNK_FREE)) {
			c[j]->flags |= TP_CHUNK_FREE;
			j++;
		}
		tp_contig_pool_put(pool->contig, c[i]->index, j - i);
		i = j;
	}
}

void tp_chunk_pool_reclaim(struct tp_chunk_pool *pool, struct tp_chunk *c)
{
	/* Only the extent pool gives handles back before their unmap. */
	if (pool->ext)
		tp_extent_pool_reclaim(pool->ext, c);
	else
		tp_log(TP_LOG_ERROR, "vmm: chunk %u reclaimed from a chunked pool",
		       c->index);
}

void tp_chunk_pool_put(struct tp_chunk_pool *pool, struct tp_chunk *const *c,
		       size_t n)
{
	size_t i;

	if (pool->ext) {
		tp_extent_pool_put(pool->ext, c, n);
		return;
	}
	if (pool->contig) {
		put_runs(pool, c, n);
		return;
	}
	/* Backwards, so that a later take gets them in the order given. */
	for (i = n; i-- > 0;) {
		if (c[i]->flags & TP_CHUNK_FREE) {
			/* A double put would hand one chunk out twice. */
			tp_log(TP_LOG_ERROR, "vmm: chunk %u returned twice",
			       c[i]->index);
			continue;
		}
		push_free(pool, c[i]);
	}
}
