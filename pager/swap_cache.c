/* SPDX-License-Identifier: MIT */
/*
 * The swap cache (pager.swap_cache): a RESIDENT page may keep the host
 * copy it came back from, so that leaving again needs no copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

void tp_pager_cache_page(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_page *p, void *buf, struct tp_event *ev)
{
	p->swap = buf;
	p->ev = ev ? tp_vmm_event_get(ev) : NULL;
	t->cached_pages++;
	pg->swap.cached++;
}

void tp_pager_reloaded_buffer(struct tp_pager *pg, struct tp_tensor *t,
			      struct tp_page *p, void *buf,
			      struct tp_event *ev)
{
	if (pg->conf.swap_cache)
		tp_pager_cache_page(pg, t, p, buf, ev);
	else if (ev)
		tp_swap_put_after(pg, buf, ev);
	else
		tp_swap_put(pg, &buf, 1);
}

void tp_pager_uncache_page(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_page *p)
{
	if (p->state != TP_PAGE_RESIDENT || !p->swap)
		return;
	if (p->ev) {
		tp_swap_put_after(pg, p->swap, p->ev);
		tp_vmm_event_put(pg->vmm, p->ev);
		p->ev = NULL;
	} else {
		tp_swap_put(pg, &p->swap, 1);
	}
	p->swap = NULL;
	t->cached_pages--;
	pg->swap.cached--;
}

void tp_pager_cache_settle(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *done = NULL;

	for (size_t i = 0; i < t->nr_pages && t->cached_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_RESIDENT || !p->swap || !p->ev ||
		    p->ev == done)
			continue;
		tp_vmm_wait_why("a swap cache copy");
		if (tp_vmm_event_sync(pg->vmm, p->ev)) {
			tp_vmm_sync_all(pg->vmm);
			return;
		}
		done = p->ev;
	}
}

void tp_pager_uncache(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		      size_t last)
{
	for (size_t i = first; i <= last && t->cached_pages; i++)
		tp_pager_uncache_page(pg, t, &t->pages[i]);
}

size_t tp_pager_cache_shrink(struct tp_pager *pg, size_t want,
			     const struct tp_tensor *keep)
{
	struct tp_tensor *t;
	size_t n = 0;

	/* Oldest tensors first: the swap is full, which is rare. */
	cds_list_for_each_entry(t, &pg->tensors, link) {
		if (n >= want || !pg->swap.cached)
			break;
		if (t == keep || !t->cached_pages)
			continue;
		n += t->cached_pages;
		tp_pager_uncache(pg, t, 0, t->nr_pages - 1);
	}
	return n;
}
