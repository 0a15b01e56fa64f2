/* SPDX-License-Identifier: MIT */
/*
 * The extent pool: handles sized to the runs they back, reused by size,
 * re-carved when the budget has no room for the size wanted.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "base/array.h"
#include "base/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/deferred.h"
#include "vmm/event.h"
#include "vmm/extent_pool.h"

struct tp_extent_pool *tp_extent_pool_new(size_t budget, size_t max_pages,
					  size_t headroom)
{
	struct tp_extent_pool *ep;

	if (!budget) {
		errno = EINVAL;
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->budget = budget;
	ep->max_pages = max_pages && max_pages < budget ? max_pages : budget;
	ep->headroom = headroom;

	CDS_INIT_LIST_HEAD(&ep->lru);
	CDS_INIT_LIST_HEAD(&ep->taken);
	CDS_INIT_LIST_HEAD(&ep->pend);
	for (size_t i = 0; i < TP_EXTENT_BUCKETS; i++)
		CDS_INIT_LIST_HEAD(&ep->by_size[i]);
	return ep;
}

/* --- the offset space ------------------------------------------------ */

static int hole_insert(struct tp_extent_pool *ep, size_t at, size_t start,
		       size_t len)
{
	if (ep->nholes == ep->cap_holes) {
		struct tp_extent_hole *h;

		h = tp_array_grow(ep->holes, &ep->cap_holes,
				  ep->cap_holes + 1, sizeof(*h), 16);
		if (!h)
			return -ENOMEM;
		ep->holes = h;
	}
	for (size_t i = ep->nholes; i > at; i--)
		ep->holes[i] = ep->holes[i - 1];
	ep->holes[at] = (struct tp_extent_hole){ .start = start, .len = len };
	ep->nholes++;
	return 0;
}

static void hole_remove(struct tp_extent_pool *ep, size_t at)
{
	for (size_t i = at; i + 1 < ep->nholes; i++)
		ep->holes[i] = ep->holes[i + 1];
	ep->nholes--;
}

/* First fit in the holes, else at the top. */
static size_t space_alloc(struct tp_extent_pool *ep, size_t n)
{
	size_t start;

	for (size_t i = 0; i < ep->nholes; i++) {
		struct tp_extent_hole *h = &ep->holes[i];

		if (h->len < n)
			continue;
		start = h->start;
		h->start += n;
		h->len -= n;
		if (!h->len)
			hole_remove(ep, i);
		return start;
	}
	start = ep->top;
	ep->top += n;
	return start;
}

/*
 * Give [@start, @start + @n) back, merged with the holes beside it; at
 * the top, the top comes down. A hole that cannot be recorded only costs
 * offset space (the memory itself is released by the backend).
 */
static void space_free(struct tp_extent_pool *ep, size_t start, size_t n)
{
	size_t i = 0;

	while (i < ep->nholes && ep->holes[i].start < start)
		i++;
	if (i && ep->holes[i - 1].start + ep->holes[i - 1].len == start) {
		ep->holes[i - 1].len += n;
		if (i < ep->nholes && start + n == ep->holes[i].start) {
			ep->holes[i - 1].len += ep->holes[i].len;
			hole_remove(ep, i);
		}
		i--;
	} else if (i < ep->nholes && start + n == ep->holes[i].start) {
		ep->holes[i].start = start;
		ep->holes[i].len += n;
	} else if (hole_insert(ep, i, start, n)) {
		return;
	}
	if (ep->holes[i].start + ep->holes[i].len == ep->top) {
		ep->top = ep->holes[i].start;
		hole_remove(ep, i);
	}
}

/* --- handles ----------------------------------------------------------- */

static struct cds_list_head *bucket(struct tp_extent_pool *ep, size_t pages)
{
	return &ep->by_size[pages % TP_EXTENT_BUCKETS];
}

/* Whether @c's fence is a copy still in flight. */
static bool copy_fenced(struct tp_chunk *c)
{
	return c->fence && c->fence->stream != TP_STREAM_COMPUTE &&
	       c->fence->stream >= 0;
}

static void pend_drop(struct tp_extent_pool *ep, struct tp_chunk *c)
{
	if (!(c->flags & TP_CHUNK_PENDING))
		return;
	c->flags &= ~TP_CHUNK_PENDING;
	cds_list_del(&c->pend);
	ep->npend -= c->pages;
}

static void free_push(struct tp_extent_pool *ep, struct tp_chunk *c)
{
	c->flags |= TP_CHUNK_FREE;
	cds_list_del(&c->lru);
	cds_list_add_tail(&c->lru, &ep->lru);
	cds_list_add_tail(&c->bucket, bucket(ep, c->pages));
	ep->nfree += c->pages;
	if (copy_fenced(c)) {
		c->flags |= TP_CHUNK_PENDING;
		cds_list_add_tail(&c->pend, &ep->pend);
		ep->npend += c->pages;
	}
}

/* Off the free lists, onto the taken list. */
static void free_unlink(struct tp_extent_pool *ep, struct tp_chunk *c)
{
	pend_drop(ep, c);
	c->flags &= ~TP_CHUNK_FREE;
	c->takes++;
	cds_list_del(&c->lru);
	cds_list_del(&c->bucket);
	cds_list_add_tail(&c->lru, &ep->taken);
	ep->nfree -= c->pages;
}

/*
 * The most recently freed handle of exactly @pages chunks, or NULL; one
 * fenced by a copy in flight only with @pending.
 */
static struct tp_chunk *free_find(struct tp_extent_pool *ep, size_t pages,
				  bool pending)
{
	struct tp_chunk *c;

	cds_list_for_each_entry_reverse(c, bucket(ep, pages), bucket)
		if (c->pages == pages &&
		    (pending || !(c->flags & TP_CHUNK_PENDING)))
			return c;
	return NULL;
}

static void handle_destroy(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			   struct tp_chunk *c)
{
	if (c->flags & TP_CHUNK_UNBORN)
		ep->unborn -= c->pages;
	tp_vmm_do_chunk_destroy(vmm, c);
	if (c->fence)
		tp_vmm_event_put(vmm, c->fence);
	cds_list_del(&c->lru);
	space_free(ep, c->index, c->pages);
	ep->created -= c->pages;
	ep->handles--;
	vmm->stats.chunks_created = ep->created;
	vmm->stats.handles = ep->handles;
	free(c);
}

/* Device memory in handles: made, and released behind but not gone. */
static void device_peak(struct tp_vmm *vmm, const struct tp_extent_pool *ep)
{
	size_t held = ep->created - ep->unborn + ep->dying;

	if (held > vmm->stats.chunks_device_peak)
		vmm->stats.chunks_device_peak = held;
}

/*
 * A handle of @pages chunks into the budget: made now, or with @unborn
 * left for the driver thread to make (TP_CHUNK_UNBORN; a fault injected
 * into its creation fails here, where the call would have been).
 */
static int handle_create(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			 size_t pages, bool unborn, struct tp_chunk **out)
{
	struct tp_chunk *c = calloc(1, sizeof(*c));
	uint64_t t0;
	int ret;

	if (!c)
		return -ENOMEM;
	c->pages = (uint32_t)pages;
	c->index = (uint32_t)space_alloc(ep, pages);
	if (unborn)
		ret = tp_vmm_call_begin(vmm, TP_CALL_CHUNK_CREATE, true, &t0);
	else
		ret = tp_vmm_do_chunk_create(vmm, c, true);
	if (ret) {
		space_free(ep, c->index, pages);
		free(c);
		return ret;
	}
	c->flags = TP_CHUNK_CREATED | (unborn ? TP_CHUNK_UNBORN : 0);
	cds_list_add_tail(&c->lru, &ep->taken);
	ep->created += pages;
	if (unborn)
		ep->unborn += pages;
	ep->handles++;
	vmm->stats.chunks_created = ep->created;
	vmm->stats.handles = ep->handles;
	vmm->stats.handles_created++;
	if (!unborn)	/* else device memory grows where it is made */
		device_peak(vmm, ep);
	*out = c;
	return 0;
}

void tp_extent_pool_born(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			 struct tp_chunk *c, size_t dying)
{
	size_t held;

	if (!(c->flags & TP_CHUNK_UNBORN))
		return;
	c->flags &= ~TP_CHUNK_UNBORN;
	ep->unborn -= c->pages;
	held = ep->created - ep->unborn + dying;
	if (held > vmm->stats.chunks_device_peak)
		vmm->stats.chunks_device_peak = held;
}

/* Chunks of free handles that can be released now: none still mapped. */
static size_t releasable(const struct tp_extent_pool *ep)
{
	const struct tp_chunk *c;
	size_t n = 0;

	cds_list_for_each_entry(c, &ep->lru, lru)
		if (!c->old_maps)
			n += c->pages;
	return n;
}

/* The driver thread released @c: its memory and offsets are free. */
static void handle_gone(struct tp_vmm *vmm, struct tp_chunk *c)
{
	struct tp_extent_pool *ep = vmm->pool->ext;

	if (c->fence)
		tp_vmm_event_put(vmm, c->fence);
	space_free(ep, c->index, c->pages);
	ep->dying -= c->pages;
	vmm->stats.chunks_dying = ep->dying;
	free(c);
}

/*
 * Release the free handle @c behind: out of the budget now, out of device
 * memory once the driver thread has unmapped its old mappings and
 * released it. Return: 0, or -ENOMEM (@c stays free).
 */
static int release_behind(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			  struct tp_chunk *c)
{
	free_unlink(ep, c);
	cds_list_del(&c->lru);
	if (tp_deferred_add_destroy(vmm, vmm->deferred, c, handle_gone)) {
		cds_list_add_tail(&c->lru, &ep->taken);
		free_push(ep, c);
		return -ENOMEM;
	}
	ep->created -= c->pages;
	ep->dying += c->pages;
	ep->handles--;
	vmm->stats.chunks_created = ep->created;
	vmm->stats.handles = ep->handles;
	vmm->stats.chunks_dying = ep->dying;
	return 0;
}

/*
 * Release the free handle @c to re-carve: now, or with @behind by the
 * driver thread (release_behind()). Return: 0, or -ENOMEM (@c stays).
 */
static int release_free(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			struct tp_chunk *c, bool behind)
{
	/*
	 * One not made yet goes behind too: a map job queued for it may
	 * still make and map it, and an old mapping of it wait to go.
	 */
	if (behind) {
		if (release_behind(vmm, ep, c))
			return -ENOMEM;
	} else {
		free_unlink(ep, c);
		handle_destroy(vmm, ep, c);
	}
	vmm->stats.handles_released++;
	return 0;
}

/*
 * Before a handle of @pages chunks is made: wait for handles released
 * behind while they and it would take device memory past the budget and
 * its headroom.
 */
static int device_room(struct tp_vmm *vmm, struct tp_extent_pool *ep,
		       size_t pages)
{
	int ret;

	while (ep->dying &&
	       ep->created + ep->dying + pages > ep->budget + ep->headroom) {
		ret = tp_deferred_wait_destroy(vmm, vmm->deferred);
		if (ret == -ENOENT || ret == -EAGAIN)
			break;		/* none left to wait for */
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Make room in the budget for a new handle of @pages chunks by releasing
 * free ones: the smallest that alone suffices, else the oldest until
 * enough. A free handle whose old owner's mapping still waits on work in
 * flight (ordered reuse) is released only once that unmap is done: the
 * work still reads it. Where the driver thread releases behind
 * (vmm.release_behind), every free handle goes at once and that thread
 * waits instead; the caller waits only while device memory would pass
 * the budget and its headroom (device_room()). With @born_behind (maps
 * made ahead) the new handle is the driver thread's to make, after the
 * releases queued before it: they go behind whatever the headroom, and
 * device memory still never passes the budget. Return: 0, or -ENOMEM
 * when the free handles cannot make it.
 */
static int recarve(struct tp_vmm *vmm, struct tp_extent_pool *ep,
		   size_t pages, bool born_behind)
{
	struct tp_chunk *c, *tmp, *best = NULL;
	size_t lack;
	bool behind;
	int ret = 0;

	if (ep->budget - ep->created >= pages)
		return 0;
	lack = pages - (ep->budget - ep->created);
	if (ep->nfree < lack)
		return -ENOMEM;
	vmm->stats.recarves++;
	behind = (ep->headroom || born_behind) &&
		 tp_deferred_behind(vmm->deferred);
	if (!behind) {
		/* Rarely: wait for the old mappings that keep enough from
		 * going. */
		tp_deferred_reap(vmm, vmm->deferred);
		while (releasable(ep) < lack &&
		       !(ret = tp_deferred_wait_oldest(vmm, vmm->deferred)))
			;
		/* -ENOENT: none left to wait for; else the device's. */
		if (ret && ret != -ENOENT)
			return ret;
	}
	cds_list_for_each_entry(c, &ep->lru, lru)
		if ((behind || !c->old_maps) && c->pages >= lack &&
		    (!best || c->pages < best->pages ||
		     (c->pages == best->pages && best->old_maps &&
		      !c->old_maps)))
			best = c;
	if (best)
		return release_free(vmm, ep, best, behind);
	cds_list_for_each_entry_safe(c, tmp, &ep->lru, lru) {
		if (ep->budget - ep->created >= pages)
			break;
		if (!behind && c->old_maps)
			continue;
		ret = release_free(vmm, ep, c, behind);
		if (ret)
			return ret;
	}
	return ep->budget - ep->created >= pages ? 0 : -ENOMEM;
}

/* Fill @out with @h once per page it backs. */
static void place(struct tp_chunk **out, struct tp_chunk *h)
{
	for (size_t i = 0; i < h->pages; i++)
		out[i] = h;
}

/*
 * The largest free handle of fewer than @pages chunks but at least half
 * of them, not fenced by a copy, or NULL. At least half: the pieces of a
 * run then halve at worst, a handful of handles however small the free
 * ones are (each costs a map and a set access).
 */
static struct tp_chunk *free_find_below(struct tp_extent_pool *ep,
					size_t pages)
{
	struct tp_chunk *c, *best = NULL;

	cds_list_for_each_entry(c, &ep->lru, lru)
		if (c->pages < pages && 2 * c->pages >= pages &&
		    !(c->flags & TP_CHUNK_PENDING) &&
		    (!best || c->pages > best->pages))
			best = c;
	return best;
}

/*
 * Back the first chunks of a run of @pages (at most max_pages) with one
 * handle, into @out once per page; return how many it backs, or -errno.
 * A free handle of that size, or a new one where the budget has room.
 * Without room, the largest smaller free handle of at least half the size
 * backs the run's first part (the caller takes the rest): a run of two
 * handles costs a map and a set access more, where re-carving releases
 * what is free and makes a handle anew, and the next run of the smaller
 * size re-carves back. With no such handle the pool is re-carved.
 */
static long take_one(struct tp_vmm *vmm, struct tp_extent_pool *ep,
		     size_t pages, struct tp_chunk **out)
{
	struct tp_chunk *c = free_find(ep, pages, false);
	bool born_behind = vmm->deferred->ahead.on;
	int ret;

	if (!c && ep->budget - ep->created < pages) {
		c = free_find_below(ep, pages);
		if (c) {
			free_unlink(ep, c);
			place(out, c);
			return (long)c->pages;
		}
	}
	/* One fenced by a copy, when no other memory can make it. */
	if (!c && ep->budget - ep->created + ep->nfree - ep->npend < pages)
		c = free_find(ep, pages, true);
	if (!c) {
		uint64_t before = vmm->deferred->destroys_queued;

		ret = recarve(vmm, ep, pages, born_behind);
		/* Made behind the releases, it never passes the budget. */
		if (!ret && !born_behind)
			ret = device_room(vmm, ep, pages);
		if (!ret)
			ret = handle_create(vmm, ep, pages, born_behind, &c);
		if (ret)
			return ret;
		c->after_lo = before;
		c->after_hi = vmm->deferred->destroys_queued;
	} else {
		free_unlink(ep, c);
	}
	place(out, c);
	return (long)pages;
}

int tp_extent_pool_take(struct tp_vmm *vmm, struct tp_extent_pool *ep,
			struct tp_chunk **out, size_t n)
{
	size_t done = 0;
	int ret;

	if (n > tp_extent_pool_available(ep) + ep->npend)
		return -ENOMEM;
	while (done < n) {
		size_t pages = n - done < ep->max_pages ? n - done :
							  ep->max_pages;
		long got = take_one(vmm, ep, pages, out + done);

		if (got < 0) {
			ret = (int)got;
			goto err_put;
		}
		done += (size_t)got;
	}
	return 0;

err_put:
	tp_extent_pool_put(ep, out, done);
	return ret;
}

void tp_extent_pool_put(struct tp_extent_pool *ep, struct tp_chunk *const *c,
			size_t n)
{
	for (size_t i = 0; i < n; i += c[i]->pages) {
		if (c[i]->flags & TP_CHUNK_FREE) {
			/* A double put would hand one handle out twice. */
			tp_log(TP_LOG_ERROR, "vmm: handle at %u returned twice",
			       c[i]->index);
			continue;
		}
		free_push(ep, c[i]);
	}
}

void tp_extent_pool_reclaim(struct tp_extent_pool *ep, struct tp_chunk *c)
{
	if (c->flags & TP_CHUNK_FREE)
		free_unlink(ep, c);
}

size_t tp_extent_pool_available(const struct tp_extent_pool *ep)
{
	return ep->budget - ep->created + ep->nfree - ep->npend;
}

size_t tp_extent_pool_pending(const struct tp_extent_pool *ep)
{
	return ep->npend;
}

size_t tp_extent_pool_refresh(struct tp_vmm *vmm, struct tp_extent_pool *ep)
{
	struct tp_chunk *c, *tmp;
	size_t n = 0;

	/* Observation only: neither counted nor a point of failure. */
	cds_list_for_each_entry_safe(c, tmp, &ep->pend, pend) {
		if (vmm->ops->event_query(vmm, c->fence))
			continue;
		tp_vmm_event_put(vmm, c->fence);
		c->fence = NULL;
		n += c->pages;
		pend_drop(ep, c);
	}
	return n;
}

void tp_extent_pool_free(struct tp_vmm *vmm, struct tp_extent_pool *ep)
{
	struct tp_chunk *c, *tmp;
	size_t taken;

	if (!ep)
		return;
	taken = ep->created - ep->nfree;
	if (taken)
		tp_log(TP_LOG_WARN, "vmm: %zu chunks still taken at close", taken);
	cds_list_for_each_entry_safe(c, tmp, &ep->lru, lru) {
		free_unlink(ep, c);
		handle_destroy(vmm, ep, c);
	}
	cds_list_for_each_entry_safe(c, tmp, &ep->taken, lru)
		handle_destroy(vmm, ep, c);
	free(ep->holes);
	free(ep);
}
