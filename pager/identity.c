/* SPDX-License-Identifier: MIT */
/*
 * Identities: two tensors trade their pages, or one drops its contents
 * (in-place ops, lineage's versions).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

int tp_pager_swap_identity(struct tp_pager *pg, struct tp_tensor *a,
			   struct tp_tensor *b)
{
	int ret;

	if (a == b || a->slab || b->slab || a->nr_pages != b->nr_pages)
		return -EINVAL;
	if (a->pins || b->pins)
		return -EBUSY;
	ret = tp_pager_settle(pg, a, 0, a->nr_pages - 1);
	if (!ret)
		ret = tp_pager_settle(pg, b, 0, b->nr_pages - 1);
	if (ret)
		return ret;
	tp_pager_cand_drop(pg, a);
	tp_pager_cand_drop(pg, b);
#define SWAP(x, y) do { __typeof__(x) _s = (x); (x) = (y); (y) = _s; } while (0)
	/* Whether a range is reserved goes with the range. */
	SWAP(a->va, b->va);
	SWAP(a->unreserved, b->unreserved);
	SWAP(a->pages, b->pages);
	SWAP(a->resident_pages, b->resident_pages);
	SWAP(a->cached_pages, b->cached_pages);
	SWAP(a->evicted_pages, b->evicted_pages);
	SWAP(a->pinned_pages, b->pinned_pages);
	SWAP(a->inflight_pages, b->inflight_pages);
	SWAP(a->prefetched, b->prefetched);
	SWAP(a->last_use, b->last_use);
	SWAP(a->lk, b->lk);
	SWAP(a->own_range, b->own_range);
#undef SWAP
	if (a->own_range)
		a->own_range->owner = a;
	if (b->own_range)
		b->own_range->owner = b;
	/* Each node array keeps its keys (addresses) and changes owner. */
	a->lk->t = a;
	b->lk->t = b;
	for (size_t i = 0; i < a->lk->n; i++)
		rcu_assign_pointer(a->lk->node[i].t, a);
	for (size_t i = 0; i < b->lk->n; i++)
		rcu_assign_pointer(b->lk->node[i].t, b);
	tp_pager_cand_update(pg, a);
	tp_pager_cand_update(pg, b);
	return 0;
}

int tp_pager_drop_contents(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *ev;
	int ret;

	if (t->slab)
		return -EPERM;
	if (t->pins)
		return -EBUSY;
	/* A copy out no one will read: not waited for. */
	tp_pager_drop_offloading(pg, t, TP_PAGE_EVICTED);
	tp_pager_inflight_done(pg, t);
	ret = tp_pager_settle(pg, t, 0, t->nr_pages - 1);
	if (ret)
		return ret;
	/* Training frees the same sizes every step: a freed tensor's
	 * range serves the next one of its size without a driver call. */
	if (tp_range_cache_put_dead(pg, t)) {
		tp_pager_cand_update(pg, t);
		return 0;
	}
	ev = tp_pager_leave_fence(pg, t);
	if (!ev)
		return -errno;
	ret = tp_pager_unmap_pages(pg, t, ev, true, SIZE_MAX);
	tp_vmm_event_put(pg->vmm, ev);
	if (ret)
		return ret;
	for (size_t i = 0; i < t->nr_pages; i++) {
		struct tp_page *p = &t->pages[i];

		/* Nothing to drop: marked so that acquire regenerates it
		 * rather than hand out a fresh chunk. */
		if (p->state == TP_PAGE_UNBACKED)
			tp_page_set(t, p, TP_PAGE_EVICTED);
	}
	tp_pager_drop_swapped(pg, t, 0, t->nr_pages - 1);
	tp_pager_cand_update(pg, t);
	return 0;
}

void tp_pager_drop_swapped(struct tp_pager *pg, struct tp_tensor *t,
			   size_t first, size_t last)
{
	for (size_t i = first; i <= last; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_OFFLOADED)
			continue;
		tp_swap_put(pg, &p->swap, 1);
		p->swap = NULL;
		tp_page_set(t, p, TP_PAGE_EVICTED);
	}
}
