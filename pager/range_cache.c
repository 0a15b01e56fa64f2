/* SPDX-License-Identifier: MIT */
/*
 * The range cache. Mapping costs driver calls that are worth as much as a
 * copy (DESIGN.md, "Backends"), so a freed tensor's range keeps its chunks
 * mapped, and a new tensor of the same page count takes it whole: a
 * training loop in steady state then makes no driver call. That includes
 * the freed tensors lineage keeps (fake deletion), which are most of what
 * a training step frees. Cached ranges are free memory that stays mapped:
 * no tensor holds them, so they count in neither the pager's held chunks,
 * its peak nor its watermarks, and they are the first thing unmapped when
 * an allocation needs chunks, oldest first.
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "pager/pager_int.h"

/* Move @t's fully resident range, chunks and all, into the cache. Return:
 * the cached range, or NULL where @t's may not be cached. */
static struct tp_cached_range *cache_range(struct tp_pager *pg,
					   struct tp_tensor *t)
{
	struct tp_range_cache *rc = &pg->cache;
	struct tp_cached_range *r;
	size_t max = 0;

	/* pager.range_cache_max may change at run time (tp_ctl_set). */
	if (pg->conf.range_cache)
		max = pg->conf.range_cache_max / pg->chunk;
	if (t->slab || t->unreserved || t->nr_pages > max ||
	    t->resident_pages != t->nr_pages || t->inflight_pages)
		return NULL;
	while (rc->chunks + t->nr_pages > max)
		tp_range_cache_shrink(pg);
	/* The contents are done with: so is their copy in host swap. */
	tp_pager_cache_settle(pg, t);
	tp_pager_uncache(pg, t, 0, t->nr_pages - 1);
	r = malloc(sizeof(*r) + t->nr_pages * sizeof(r->chunks[0]));
	if (!r)
		return NULL;
	r->va = t->va;
	r->nr_pages = t->nr_pages;
	r->owner = NULL;
	/* The memory's last use goes with it. */
	r->last_use = t->last_use;
	t->last_use = NULL;
	for (size_t i = 0; i < t->nr_pages; i++) {
		r->chunks[i] = t->pages[i].chunk;
		tp_page_set_chunk(t, &t->pages[i], NULL);
	}
	cds_list_add_tail(&r->link, &rc->ranges);
	cds_list_add_tail(&r->size_link,
			  &rc->by_size[r->nr_pages % TP_RANGE_BUCKETS]);
	rc->chunks += r->nr_pages;
	/* Held by no tensor: free memory that stays mapped. */
	tp_pager_held_add(pg, -(long)r->nr_pages);
	return r;
}

bool tp_range_cache_put(struct tp_pager *pg, struct tp_tensor *t)
{
	if (!cache_range(pg, t))
		return false;
	t->resident_pages = 0;		/* torn down: the states are moot */
	return true;
}

bool tp_range_cache_put_dead(struct tp_pager *pg, struct tp_tensor *t)
{
	if (!pg->conf.range_cache_freed || !t->dead ||
	    !cache_range(pg, t))
		return false;
	for (size_t i = 0; i < t->nr_pages; i++)
		tp_page_set(t, &t->pages[i], TP_PAGE_EVICTED);
	t->unreserved = true;		/* the range went with the chunks */
	return true;
}

/* A cached range of exactly @t's page count, newest first (its chunks
 * are the most likely still in the device's caches), or NULL. */
static struct tp_cached_range *find_range(struct tp_pager *pg, size_t n)
{
	struct tp_cached_range *r;

	cds_list_for_each_entry_reverse(r,
			&pg->cache.by_size[n % TP_RANGE_BUCKETS], size_link)
		if (r->nr_pages == n)
			return r;
	return NULL;
}

/* @r's bytes are no one's any more: its owner can no longer rescue them. */
static void disown(struct tp_cached_range *r)
{
	if (r->owner)
		r->owner->own_range = NULL;
	r->owner = NULL;
}

/* @t takes @r whole: its address, its mapped chunks, their last use. */
static void take_range(struct tp_pager *pg, struct tp_tensor *t,
		       struct tp_cached_range *r)
{
	disown(r);
	t->va = r->va;
	t->unreserved = false;		/* the range comes with the chunks */
	if (t->last_use)
		tp_vmm_event_put(pg->vmm, t->last_use);
	t->last_use = r->last_use;
	for (size_t i = 0; i < r->nr_pages; i++) {
		t->pages[i].left_mapped = false;
		tp_page_set_chunk(t, &t->pages[i], r->chunks[i]);
		tp_page_set(t, &t->pages[i], TP_PAGE_RESIDENT);
	}
	pg->cache.chunks -= r->nr_pages;
	tp_pager_held_add(pg, (long)r->nr_pages);
	cds_list_del(&r->link);
	cds_list_del(&r->size_link);
	free(r);
}

bool tp_range_cache_get(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_cached_range *r = find_range(pg, t->nr_pages);

	if (!r)
		return false;
	take_range(pg, t, r);
	return true;
}

/* Whether @t may leave its address, or take another (pager.move_evicted). */
static bool may_move(const struct tp_pager *pg, const struct tp_tensor *t)
{
	return pg->conf.move_evicted && pg->conf.range_cache &&
	       !t->addr_shown && !t->dead && !t->slab && !t->rows_held &&
	       !t->inflight_pages;
}

bool tp_range_cache_movable(const struct tp_pager *pg,
			    const struct tp_tensor *t)
{
	return may_move(pg, t) && !t->pins;
}

bool tp_range_cache_fits_room(const struct tp_pager *pg,
			      const struct tp_tensor *t)
{
	const struct tp_tensor *room = pg->room_for;

	return room && room != t && t->nr_pages == room->nr_pages &&
	       tp_range_cache_movable(pg, t);
}

bool tp_pager_moves_into_room(const struct tp_pager *pg,
			      const struct tp_tensor *t)
{
	return t->resident_pages == t->nr_pages &&
	       tp_range_cache_fits_room(pg, t);
}

bool tp_range_cache_put_evicted(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_cached_range *r;

	if (!tp_range_cache_movable(pg, t))
		return false;
	r = cache_range(pg, t);
	if (!r)
		return false;
	tp_lookup_del_tensor(pg, t);
	for (size_t i = 0; i < t->nr_pages; i++)
		tp_page_set(t, &t->pages[i], TP_PAGE_EVICTED);
	t->unreserved = true;		/* the range went with the chunks */
	/* Its bytes are @t's until someone takes the range. */
	t->own_range = r;
	r->owner = t;
	return true;
}

size_t tp_range_cache_rescue(struct tp_pager *pg, struct tp_tensor *t)
{
	size_t n = t->nr_pages;

	if (!t->own_range || !pg->conf.rescue)
		return 0;
	take_range(pg, t, t->own_range);
	if (!t->dead)
		tp_lookup_add_tensor(pg, t);
	pg->c.rescued_pages += n;
	tp_pager_cand_update(pg, t);
	return n;
}

void tp_range_cache_forget(struct tp_tensor *t)
{
	if (t->own_range)
		disown(t->own_range);
}

/* Whether @t may be backed whole by a cached range: pinned by the
 * acquire under way, no address handed out yet while no page is
 * resident; pages that hold data elsewhere (host swap, a copy in flight)
 * come back by the usual way, into their own range. */
bool tp_range_cache_may_adopt(const struct tp_pager *pg,
			      const struct tp_tensor *t)
{
	if (!may_move(pg, t) || t->resident_pages)
		return false;
	for (size_t i = 0; i < t->nr_pages; i++)
		if (t->pages[i].state != TP_PAGE_UNBACKED &&
		    t->pages[i].state != TP_PAGE_EVICTED)
			return false;
	return true;
}

bool tp_range_cache_holds(struct tp_pager *pg, const struct tp_tensor *t)
{
	return t->own_range || find_range(pg, t->nr_pages);
}

bool tp_range_cache_adopt(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_cached_range *r;

	/* Its own, if it is still there, leaves the others' bytes be. */
	r = t->own_range ? t->own_range : find_range(pg, t->nr_pages);
	if (!r)
		return false;
	if (!t->unreserved) {
		tp_lookup_del_tensor(pg, t);
		tp_vmm_release(pg->vmm, t->va, t->nr_pages * pg->chunk);
	}
	take_range(pg, t, r);
	tp_lookup_add_tensor(pg, t);
	pg->c.ranges_adopted++;
	return true;
}

size_t tp_range_cache_shrink(struct tp_pager *pg)
{
	struct tp_range_cache *rc = &pg->cache;
	struct tp_cached_range *r;
	struct tp_event *ev;
	size_t len, n;
	int ret = -ENOMEM;

	if (cds_list_empty(&rc->ranges))
		return 0;
	r = cds_list_first_entry(&rc->ranges, struct tp_cached_range, link);
	n = r->nr_pages;
	len = n * pg->chunk;
	/* The freed tensor's last ops may still run on the compute stream. */
	if (pg->vmm->ordered_reuse && r->last_use)
		ev = tp_vmm_event_get(r->last_use);
	else
		ev = tp_pager_compute_event(pg);
	if (ev)
		ret = tp_vmm_unmap_after(pg->vmm, r->va, r->chunks, n, ev);
	if (ret) {
		tp_vmm_stream_sync(pg->vmm, TP_STREAM_COMPUTE);
		if (tp_vmm_unmap(pg->vmm, r->va, r->chunks, n) == 0)
			tp_vmm_chunks_put(pg->vmm, r->chunks, n);
	}
	if (ev)
		tp_vmm_event_put(pg->vmm, ev);
	disown(r);
	if (r->last_use)
		tp_vmm_event_put(pg->vmm, r->last_use);
	tp_vmm_release(pg->vmm, r->va, len);
	cds_list_del(&r->link);
	cds_list_del(&r->size_link);
	rc->chunks -= n;
	free(r);
	return n;
}

void tp_range_cache_fini(struct tp_pager *pg)
{
	while (tp_range_cache_shrink(pg))
		;
}
