/* SPDX-License-Identifier: MIT */
/*
 * The chunk pool: a budget of chunks, handles created lazily and recycled.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "ctx/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"

struct tp_chunk_pool *tp_chunk_pool_new(size_t nr)
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
	pool->chunks = calloc(nr, sizeof(*pool->chunks));
	if (!pool->chunks) {
		free(pool);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < nr; i++)
		pool->chunks[i].index = (uint32_t)i;
	pool->nr = nr;
	return pool;
}

void tp_chunk_pool_free(struct tp_vmm *vmm, struct tp_chunk_pool *pool)
{
	size_t i;

	if (!pool)
		return;
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

int tp_chunk_pool_take(struct tp_vmm *vmm, struct tp_chunk_pool *pool,
		       struct tp_chunk **out, size_t n)
{
	size_t recycled = n < pool->nfree ? n : pool->nfree;
	size_t fresh = n - recycled, i;
	int ret;

	if (n > tp_chunk_pool_available(pool))
		return -ENOMEM;
	/*
	 * Create the new handles first: if the backend fails half way, what
	 * was made goes on the free list for later and nothing is taken.
	 */
	for (i = 0; i < fresh; i++) {
		struct tp_chunk *c = &pool->chunks[pool->created + i];

		ret = tp_vmm_do_chunk_create(vmm, c);
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
	return 0;

err_keep:
	while (i--) {
		push_free(pool, &pool->chunks[pool->created]);
		pool->created++;
	}
	vmm->stats.chunks_created = pool->created;
	return ret;
}

void tp_chunk_pool_put(struct tp_chunk_pool *pool, struct tp_chunk *const *c,
		       size_t n)
{
	size_t i;

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
