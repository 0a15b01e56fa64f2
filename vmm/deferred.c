/* SPDX-License-Identifier: MIT */
/*
 * Deferred unmaps, reaped by polling their events.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/deferred.h"

struct tp_deferred *tp_deferred_new(void)
{
	struct tp_deferred *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->tail = &d->head;
	return d;
}

int tp_deferred_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		    struct tp_chunk *const *chunks, size_t n,
		    struct tp_event *ev, bool returns)
{
	struct tp_deferred_unmap *u;

	u = malloc(sizeof(*u) + n * sizeof(u->chunks[0]));
	if (!u)
		return -ENOMEM;
	u->next = NULL;
	u->va = va;
	u->n = n;
	u->ev = tp_vmm_event_get(ev);
	u->returns = returns;
	memcpy(u->chunks, chunks, n * sizeof(u->chunks[0]));
	if (!returns)
		for (size_t i = 0; i < n; i += chunks[i]->pages)
			chunks[i]->old_maps++;
	*d->tail = u;
	d->tail = &u->next;
	d->nr++;
	if (returns)
		d->chunks += n;
	vmm->stats.deferred_unmaps = d->nr;
	return 0;
}

/*
 * Complete @u, the entry *@link points to: unmap, return the chunks, drop
 * the event. The unmap cannot be made to fail by fault injection (it is
 * the cleanup of work that already succeeded); a real backend failure
 * keeps the entry for a later reap.
 */
static int complete(struct tp_vmm *vmm, struct tp_deferred *d,
		    struct tp_deferred_unmap **link)
{
	struct tp_deferred_unmap *u = *link;
	int ret;

	if (u->returns)
		ret = tp_vmm_do_unmap(vmm, u->va, u->chunks, u->n, false);
	else
		ret = tp_vmm_do_unmap_old(vmm, u->va, u->chunks, u->n);
	if (ret) {
		tp_log(TP_LOG_ERROR, "vmm: deferred unmap of %zu chunks failed: %d",
		       u->n, ret);
		return ret;
	}
	if (u->returns) {
		tp_chunk_pool_put(vmm->pool, u->chunks, u->n);
		d->chunks -= u->n;
	} else {
		for (size_t i = 0; i < u->n; i += u->chunks[i]->pages)
			u->chunks[i]->old_maps--;
	}
	*link = u->next;
	if (d->tail == &u->next)
		d->tail = link;
	d->nr--;
	vmm->stats.deferred_unmaps = d->nr;
	tp_vmm_event_put(vmm, u->ev);
	free(u);
	return 0;
}

bool tp_deferred_overlaps(const struct tp_vmm *vmm,
			  const struct tp_deferred *d, uintptr_t va,
			  size_t len)
{
	const struct tp_deferred_unmap *u;

	for (u = d->head; u; u = u->next)
		if (u->va < va + len && va < u->va + u->n * vmm->granularity)
			return true;
	return false;
}

int tp_deferred_add_release(struct tp_vmm *vmm, struct tp_deferred *d,
			    uintptr_t va, size_t len)
{
	struct tp_deferred_release *r = malloc(sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->va = va;
	r->len = len;
	r->next = d->releases;
	d->releases = r;
	d->nr_releases++;
	vmm->stats.deferred_releases = d->nr_releases;
	return 0;
}

/*
 * Release the queued ranges that no pending unmap overlaps any more (all
 * of them when @all: at close, after every unmap). A failed release is
 * logged and dropped: retrying a range the backend refused cannot help.
 */
static void release_ranges(struct tp_vmm *vmm, struct tp_deferred *d,
			   bool all)
{
	struct tp_deferred_release **link = &d->releases;

	while (*link) {
		struct tp_deferred_release *r = *link;
		int ret;

		if (!all && tp_deferred_overlaps(vmm, d, r->va, r->len)) {
			link = &r->next;
			continue;
		}
		ret = tp_vmm_do_release(vmm, r->va, r->len, false);
		if (ret)
			tp_log(TP_LOG_ERROR, "vmm: deferred release of %zu bytes failed: %d",
			       r->len, ret);
		*link = r->next;
		d->nr_releases--;
		free(r);
	}
	vmm->stats.deferred_releases = d->nr_releases;
}

size_t tp_deferred_reap(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_deferred_unmap **link = &d->head;
	size_t done = 0;

	while (*link) {
		if (tp_vmm_event_query(vmm, (*link)->ev) == 0 &&
		    complete(vmm, d, link) == 0) {
			done++;
			continue;
		}
		link = &(*link)->next;
	}
	if (d->releases)
		release_ranges(vmm, d, false);
	return done;
}

int tp_deferred_wait_oldest(struct tp_vmm *vmm, struct tp_deferred *d)
{
	int ret;

	if (!d->head)
		return -ENOENT;
	ret = tp_vmm_event_sync(vmm, d->head->ev);
	if (ret)
		return ret;
	/* Known complete now: no need to ask again. */
	ret = complete(vmm, d, &d->head);
	tp_deferred_reap(vmm, d);
	return ret;
}

int tp_deferred_flush_range(struct tp_vmm *vmm, struct tp_deferred *d,
			    uintptr_t va, size_t len)
{
	struct tp_deferred_unmap **link = &d->head;
	int ret;

	while (*link) {
		struct tp_deferred_unmap *u = *link;
		uintptr_t end = u->va + u->n * vmm->granularity;

		if (end <= va || u->va >= va + len) {
			link = &u->next;
			continue;
		}
		ret = tp_vmm_event_sync(vmm, u->ev);
		if (ret)
			return ret;
		ret = complete(vmm, d, link);
		if (ret)
			return ret;
	}
	if (d->releases)
		release_ranges(vmm, d, false);
	return 0;
}

void tp_deferred_free(struct tp_vmm *vmm, struct tp_deferred *d)
{
	if (!d)
		return;
	while (d->head) {
		struct tp_deferred_unmap *u = d->head;

		tp_vmm_event_sync(vmm, u->ev);
		if (complete(vmm, d, &d->head)) {
			/* The backend's close tears the mappings down. */
			d->head = u->next;
			tp_vmm_event_put(vmm, u->ev);
			free(u);
		}
	}
	release_ranges(vmm, d, true);
	free(d);
}
