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
	size_t got = 0;
	int ret;

	if (n > tp_chunk_pool_available(pool))
		return -ENOMEM;
	/*
	 * Create the handles first, onto the free list: if the backend fails
	 * half way, what was made stays for later and nothing is taken.
	 */
	while (pool->nfree < n) {
		struct tp_chunk *c = &pool->chunks[pool->created];

		ret = tp_vmm_do_chunk_create(vmm, c);
		if (ret)
			return ret;
		c->flags = TP_CHUNK_CREATED;
		pool->created++;
		vmm->stats.chunks_created = pool->created;
		push_free(pool, c);
	}
	while (got < n)
		out[got++] = pop_free(pool);
	return 0;
}

void tp_chunk_pool_put(struct tp_chunk_pool *pool, struct tp_chunk *const *c,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (c[i]->flags & TP_CHUNK_FREE) {
			/* A double put would hand one chunk out twice. */
			tp_log(TP_LOG_ERROR, "vmm: chunk %u returned twice",
			       c[i]->index);
			continue;
		}
		push_free(pool, c[i]);
	}
}
