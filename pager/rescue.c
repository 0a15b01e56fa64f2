/* SPDX-License-Identifier: MIT */
/*
 * Rescues. A page that leaves (evicted, offloaded, or still on its way to
 * host swap) gives its memory back to the pool at once, fenced by the
 * last work that used it, while its old mapping waits for the vmm's
 * deferred unmap. Until someone takes that memory or the unmap is done,
 * the page's bytes are still there at its address: it comes back with
 * neither a copy nor a recompute, and without a driver call.
 */
#include <stdlib.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

/* Whether page @p left with its bytes, which may still be mapped. */
static bool left_mapped(const struct tp_page *p)
{
	return p->left_mapped && !p->pins &&
	       (p->state == TP_PAGE_OFFLOADING ||
		p->state == TP_PAGE_OFFLOADED ||
		p->state == TP_PAGE_EVICTED);
}

/*
 * Order the compute stream (or, where ops run on the caller's thread, the
 * caller) after @ev, the copy out of a page still in flight: what leaves
 * the page later, an unmap among it, is ordered after compute, and a
 * copy must not read memory unmapped under it. Return: 0 or the event
 * call's error.
 */
static int after_copy(struct tp_pager *pg, struct tp_event *ev)
{
	if (pg->host_waits) {
		tp_vmm_wait_why("a rescued page's copy out");
		return tp_vmm_event_sync(pg->vmm, ev);
	}
	return tp_vmm_stream_wait(pg->vmm, TP_STREAM_COMPUTE, ev);
}

/* Page @p of @t has its memory @c back, with the bytes it left with. */
static void rescue_page(struct tp_pager *pg, struct tp_tensor *t,
			struct tp_page *p, struct tp_chunk *c)
{
	void *buf = p->swap;
	struct tp_event *ev = p->ev;

	tp_page_set_chunk(t, p, c);
	p->swap = NULL;
	p->ev = NULL;
	tp_page_set(t, p, TP_PAGE_RESIDENT);
	if (!buf)
		return;
	/*
	 * The host copy stays as the swap cache's (an offload of the
	 * unchanged page then copies nothing), one still being made too:
	 * the buffer is the cache's once @ev is done, and what reads or
	 * frees it is ordered after @ev (a later copy on the same stream,
	 * or a wait). A write drops it, as any cached copy.
	 */
	tp_pager_reloaded_buffer(pg, t, p, buf, ev);
	if (ev)
		tp_vmm_event_put(pg->vmm, ev);
}

/*
 * Compute is ordered after the copies out of the rescued pages (@got) of
 * @t in [@first, @last] still in flight. Return: 0, or the event call's
 * error.
 */
static int order_after_copies(struct tp_pager *pg, struct tp_tensor *t,
			      size_t first, size_t last,
			      struct tp_chunk *const *got)
{
	struct tp_event *done = NULL;
	int ret;

	for (size_t i = first; i <= last; i++) {
		struct tp_page *p = &t->pages[i];

		if (!got[i - first] || p->state != TP_PAGE_OFFLOADING ||
		    p->ev == done)
			continue;
		ret = after_copy(pg, p->ev);
		if (ret)
			return ret;
		done = p->ev;
	}
	/*
	 * The copies read @t's pages at their addresses: what leaves @t
	 * next unmaps them after @t's last use, which must come after the
	 * copies too. A prefetch rescues with no op to use @t after it; its
	 * last use was recorded before the wait, and an eviction then (to
	 * make room, say) unmapped the pages under a copy still reading
	 * them: a device fault on an H100 at 4 GiB.
	 */
	if (done)
		tp_pager_note_use(pg, t);
	return 0;
}

/*
 * Undo a rescue that cannot be ordered: the handles in @got leave again
 * as they had, fenced by what fenced them.
 */
static void give_back(struct tp_pager *pg, struct tp_tensor *t,
		      size_t first, size_t last, struct tp_chunk **got)
{
	for (size_t i = first; i <= last;) {
		struct tp_chunk *h = got[i - first];
		struct tp_event *ev;

		if (!h) {
			i++;
			continue;
		}
		ev = h->fence ? tp_vmm_event_get(h->fence) : NULL;
		if (tp_vmm_unmap_after(pg->vmm, t->va + i * pg->chunk,
				       got + (i - first), h->pages, ev))
			tp_log(TP_LOG_ERROR, "pager: tensor %llu: a rescue could not be undone",
			       (unsigned long long)t->id);
		if (ev)
			tp_vmm_event_put(pg->vmm, ev);
		i += h->pages;
	}
}

size_t tp_pager_rescue(struct tp_pager *pg, struct tp_tensor *t,
		       size_t first, size_t last)
{
	struct tp_chunk **got;
	size_t n = 0;

	/*
	 * A tensor whose range went (fake-deleted, all evicted) has nothing
	 * at its old address that is its own: what is still mapped there
	 * leaves with the range, which is released once it is unmapped. A
	 * rescue would keep pages mapped where the next acquire no longer
	 * looks (it reserves a new range), and the range's release would
	 * take their addresses away under them.
	 */
	if (t->unreserved)
		return tp_range_cache_rescue(pg, t);
	if (t->slab || t->resident_pages == t->nr_pages || !pg->conf.rescue)
		return 0;
	got = calloc(last - first + 1, sizeof(*got));
	if (!got)
		return 0;	/* a rescue only saves work: none then */
	for (size_t i = first; i <= last;) {
		size_t start = i;

		while (i <= last && left_mapped(&t->pages[i]))
			i++;
		if (i == start) {
			i++;
			continue;
		}
		n += tp_vmm_rescue(pg->vmm, t->va + start * pg->chunk,
				   i - start, got + (start - first));
	}
	/*
	 * Taken back first, so that no unmap can begin meanwhile; then
	 * ordered after the copies still reading them.
	 */
	if (n && order_after_copies(pg, t, first, last, got)) {
		give_back(pg, t, first, last, got);
		n = 0;
	}
	for (size_t i = first; n && i <= last; i++)
		if (got[i - first])
			rescue_page(pg, t, &t->pages[i], got[i - first]);
	free(got);
	if (n) {
		pg->c.rescued_pages += n;
		tp_pager_held_add(pg, (long)n);
		tp_pager_inflight_done(pg, t);
		tp_pager_cand_update(pg, t);
	}
	return n;
}
