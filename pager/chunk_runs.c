/* SPDX-License-Identifier: MIT */
/*
 * Where a tensor lies in the chunk pool: the runs of consecutive chunk
 * indices behind its pages, for policies that see the pool's layout
 * (Coop's sliding window on vmm.mode = contiguous).
 */
#include "config.h"

#include "pager/pager_int.h"

size_t tp_pager_chunk_runs(const struct tp_tensor *t,
			   void (*fn)(void *arg, const struct tp_tensor *t,
				      size_t start, size_t len),
			   void *arg)
{
	size_t runs = 0;

	if (t->slab || !t->pages)
		return 0;
	for (size_t i = 0; i < t->nr_pages;) {
		const struct tp_chunk *c = t->pages[i].chunk;
		size_t j = i + 1;

		if (!c || t->pages[i].state != TP_PAGE_RESIDENT) {
			i++;
			continue;
		}
		while (j < t->nr_pages && t->pages[j].chunk &&
		       t->pages[j].state == TP_PAGE_RESIDENT &&
		       t->pages[j].chunk->index == c->index + (j - i))
			j++;
		fn(arg, t, c->index, j - i);
		runs++;
		i = j;
	}
	return runs;
}
