/* SPDX-License-Identifier: MIT */
/*
 * Deferred unmaps, completed in order once their events have.
 *
 * On the chunked pool they are reaped by polling from the caller's thread
 * (the chunks come back to the pool then). With ordered reuse the chunks
 * are back already and only the old mappings wait: a driver thread of
 * the library's own completes them, and the ranges released behind them,
 * so that the thread issuing the ops makes none of those calls and waits
 * only where it needs one done (a re-carve, a map over a range still
 * mapped). On sim that thread is played by the backend on a clock of its
 * own (worker_begin), the entries run where the caller polls, and what
 * they do counts from when the played thread would have done it.
 *
 * One file, past the usual length: the list, the driver thread that
 * empties it and the played thread of the sim share the entries and the
 * lock; each mode is a branch of the same few operations.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/deferred.h"

struct tp_deferred *tp_deferred_new(void)
{
	struct tp_deferred *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;

	if (!d)
		return NULL;
	d->tail = &d->head;
	tp_map_ahead_init(&d->ahead);

	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	return d;
}

void tp_deferred_lock(struct tp_deferred *d)
{
	pthread_mutex_lock(&d->lock);
}

void tp_deferred_unlock(struct tp_deferred *d)
{
	pthread_mutex_unlock(&d->lock);
}

int tp_deferred_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		    struct tp_chunk *const *chunks, size_t n,
		    struct tp_event *ev, bool returns)
{
	struct tp_deferred_unmap *u;

	u = malloc(sizeof(*u) + n * sizeof(u->chunks[0]) +
		   (returns ? 0 : n * sizeof(*u->takes)));
	if (!u)
		return -ENOMEM;
	u->takes = returns ? NULL : (uint32_t *)&u->chunks[n];
	u->next = NULL;
	u->va = va;
	u->n = n;
	u->ev = ev ? tp_vmm_event_get(ev) : NULL;
	u->returns = returns;
	u->busy = false;
	u->order = ++d->order;
	u->queued_at = tp_vmm_now_ns(vmm);
	u->done_at = 0;
	memcpy(u->chunks, chunks, n * sizeof(u->chunks[0]));
	if (!returns)
		for (size_t i = 0; i < n; i += chunks[i]->pages) {
			chunks[i]->old_maps++;
			u->takes[i] = chunks[i]->takes;
		}
	*d->tail = u;
	d->tail = &u->next;
	d->nr++;
	if (returns)
		d->chunks += n;
	vmm->stats.deferred_unmaps = d->nr;
	if (d->mode == TP_DEFERRED_THREAD)
		pthread_cond_broadcast(&d->cond);
	return 0;
}

/*
 * The unmap of @u. The call cannot be made to fail by fault injection
 * (it is the cleanup of work that already succeeded).
 */
static int unmap_entry(struct tp_vmm *vmm, struct tp_deferred_unmap *u)
{
	int ret;

	if (u->returns)
		ret = tp_vmm_do_unmap(vmm, u->va, u->chunks, u->n, false);
	else
		ret = tp_vmm_do_unmap_old(vmm, u->va, u->chunks, u->n);
	if (ret)
		tp_log(TP_LOG_ERROR, "vmm: deferred unmap of %zu chunks failed: %d",
		       u->n, ret);
	return ret;
}

/*
 * What an unmapped @u gives back, and @u unlinked from *@link: its
 * handles to the pool, or its hold on their old mappings.
 */
static void finish(struct tp_vmm *vmm, struct tp_deferred *d,
		   struct tp_deferred_unmap **link)
{
	struct tp_deferred_unmap *u = *link;

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
	d->gone++;
	vmm->stats.deferred_unmaps = d->nr;
	tp_vmm_event_put(vmm, u->ev);
	free(u);
}

/* Unmap and finish the entry *@link (its event complete). */
static int complete(struct tp_vmm *vmm, struct tp_deferred *d,
		    struct tp_deferred_unmap **link)
{
	int ret = unmap_entry(vmm, *link);

	/* A failure keeps a chunk-returning entry for a later reap. */
	if (ret && (*link)->returns)
		return ret;
	finish(vmm, d, link);
	return 0;
}

/* --- rescues ------------------------------------------------------------ */

/*
 * Whether no one has begun @u's unmap: the driver thread has not taken
 * it, or, played, its thread could not have started it by now (its
 * event is still to come).
 */
static bool not_begun(struct tp_vmm *vmm, const struct tp_deferred *d,
		      struct tp_deferred_unmap *u);

/* Whether @u's handles are as it left them: free, taken by no one since. */
static bool untouched(const struct tp_deferred_unmap *u)
{
	if (u->returns)
		return true;	/* they never left it */
	for (size_t i = 0; i < u->n; i += u->chunks[i]->pages)
		if (!(u->chunks[i]->flags & TP_CHUNK_FREE) ||
		    u->chunks[i]->takes != u->takes[i])
			return false;
	return true;
}

size_t tp_deferred_rescue(struct tp_vmm *vmm, struct tp_deferred *d,
			  uintptr_t va, size_t n, struct tp_chunk **out)
{
	uintptr_t end = va + n * vmm->granularity;
	struct tp_deferred_unmap **link = &d->head;
	size_t got = 0;

	while (*link) {
		struct tp_deferred_unmap *u = *link;
		uintptr_t u_end = u->va + u->n * vmm->granularity;
		size_t at = (u->va - va) / vmm->granularity;

		if (u->va < va || u_end > end || !not_begun(vmm, d, u) ||
		    !untouched(u)) {
			link = &u->next;
			continue;
		}
		if (u->returns) {
			d->chunks -= u->n;
		} else {
			for (size_t i = 0; i < u->n; i += u->chunks[i]->pages) {
				u->chunks[i]->old_maps--;
				u->chunks[i]->va = u->va + i * vmm->granularity;
				tp_chunk_pool_reclaim(vmm->pool, u->chunks[i]);
			}
			/* Unmapped when left: mapped again. */
			vmm->stats.chunks_mapped += u->n;
		}
		memcpy(out + at, u->chunks, u->n * sizeof(*out));
		got += u->n;
		*link = u->next;
		if (d->tail == &u->next)
			d->tail = link;
		d->nr--;
		d->gone++;
		tp_vmm_event_put(vmm, u->ev);
		free(u);
	}
	vmm->stats.deferred_unmaps = d->nr;
	return got;
}

bool tp_deferred_overlaps_before(const struct tp_vmm *vmm,
				 const struct tp_deferred *d, uintptr_t va,
				 size_t len, uint64_t order)
{
	const struct tp_deferred_unmap *u;

	for (u = d->head; u; u = u->next)
		if (u->order < order && u->va < va + len &&
		    va < u->va + u->n * vmm->granularity)
			return true;
	return false;
}

bool tp_deferred_overlaps(const struct tp_vmm *vmm,
			  const struct tp_deferred *d, uintptr_t va,
			  size_t len)
{
	return tp_deferred_overlaps_before(vmm, d, va, len, UINT64_MAX);
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

static void release_ranges_in(struct tp_vmm *vmm, struct tp_deferred *d,
			      bool all, uintptr_t va, uintptr_t end);

/* --- handles released behind ------------------------------------------ */

bool tp_deferred_behind(const struct tp_deferred *d)
{
	return d->mode == TP_DEFERRED_THREAD || d->mode == TP_DEFERRED_PLAYED;
}

/* Release @x's handle: the driver call, on whichever thread does it. */
static void destroy_call(struct tp_vmm *vmm, struct tp_deferred_destroy *x)
{
	tp_vmm_do_chunk_destroy(vmm, x->c);
}

/* The pool has what @x's handle kept back; @x unlinked from *@link. */
static void destroy_finish(struct tp_vmm *vmm, struct tp_deferred *d,
			   struct tp_deferred_destroy **link)
{
	struct tp_deferred_destroy *x = *link;

	*link = x->next;
	d->nr_destroys--;
	x->done(vmm, x->c);
	free(x);
}

static void play_destroy(struct tp_vmm *vmm, struct tp_deferred *d,
			 struct tp_deferred_destroy *x);
static void play_reap_destroys(struct tp_vmm *vmm, struct tp_deferred *d);
static uint64_t play(struct tp_vmm *vmm, struct tp_deferred_unmap *u);

int tp_deferred_add_destroy(struct tp_vmm *vmm, struct tp_deferred *d,
			    struct tp_chunk *c,
			    void (*done)(struct tp_vmm *vmm, struct tp_chunk *c))
{
	struct tp_deferred_destroy *x = calloc(1, sizeof(*x)), **tail;

	if (!x)
		return -ENOMEM;
	x->c = c;
	x->done = done;
	x->seq = ++d->destroys_queued;
	for (tail = &d->destroys; *tail; tail = &(*tail)->next)
		;
	*tail = x;
	d->nr_destroys++;
	if (d->mode == TP_DEFERRED_PLAYED)
		play_destroy(vmm, d, x);
	else
		pthread_cond_broadcast(&d->cond);
	return 0;
}

uint64_t tp_deferred_play_over(struct tp_vmm *vmm, struct tp_deferred *d,
			       uintptr_t va, size_t len)
{
	struct tp_deferred_unmap *u;
	uint64_t t, last = 0;

	for (u = d->head; u; u = u->next) {
		if (u->va >= va + len || va >= u->va + u->n * vmm->granularity)
			continue;
		t = play(vmm, u);
		if (t > last)
			last = t;
	}
	return last;
}

/*
 * Release the queued ranges that no pending unmap overlaps any more (all
 * of them when @all: at close, after every unmap). A failed release is
 * logged and dropped: retrying a range the backend refused cannot help.
 */
static void release_ranges(struct tp_vmm *vmm, struct tp_deferred *d,
			   bool all)
{
	/* Nothing unmapped since the last look: none can go yet. */
	if (!all && d->gone == d->gone_seen)
		return;
	d->gone_seen = d->gone;
	release_ranges_in(vmm, d, all, 0, UINTPTR_MAX);
}

/*
 * The same for the ranges overlapping [@va, @end) only: those an unmap
 * just done there may have freed.
 */
static void release_ranges_in(struct tp_vmm *vmm, struct tp_deferred *d,
			      bool all, uintptr_t va, uintptr_t end)
{
	struct tp_deferred_release **link = &d->releases;

	while (*link) {
		struct tp_deferred_release *r = *link;
		int ret;

		if (r->va >= end || r->va + r->len <= va ||
		    (!all && tp_deferred_overlaps(vmm, d, r->va, r->len))) {
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

/* --- the played driver thread (sim) ------------------------------------ */

/* When the driver thread can start @u: it is queued and its event done. */
static uint64_t ready_at(struct tp_vmm *vmm, struct tp_deferred_unmap *u)
{
	uint64_t t = u->queued_at, e;

	if (u->ev && !vmm->ops->event_when(vmm, u->ev, &e) && e > t)
		t = e;
	return t;
}

/*
 * Run @u on the backend's driver-thread clock, from when it is ready or
 * the thread is free, whichever is later: when it is done.
 */
static uint64_t play(struct tp_vmm *vmm, struct tp_deferred_unmap *u)
{
	if (!u->done_at) {
		tp_vmm_background(true);
		vmm->ops->worker_begin(vmm, u->ev, u->queued_at);
		unmap_entry(vmm, u);
		u->done_at = vmm->ops->worker_end(vmm);
		tp_vmm_background(false);
	}
	return u->done_at;
}

/*
 * The entries the played thread has done by now. It takes them as they
 * become ready, one at a time: an entry whose event is still to come
 * does not hold up those behind it.
 */
static size_t play_reap(struct tp_vmm *vmm, struct tp_deferred *d)
{
	uint64_t now = tp_vmm_now_ns(vmm);
	struct tp_deferred_unmap **link = &d->head;
	size_t done = 0;

	while (*link) {
		struct tp_deferred_unmap *u = *link;

		if ((!u->done_at && ready_at(vmm, u) > now) ||
		    play(vmm, u) > now) {
			link = &u->next;
			continue;
		}
		finish(vmm, d, link);
		done++;
	}
	if (d->destroys)
		play_reap_destroys(vmm, d);
	if (d->releases)
		release_ranges(vmm, d, false);
	return done;
}

bool tp_deferred_maps_handle(const struct tp_deferred_unmap *u,
			     const struct tp_chunk *c)
{
	if (u->returns)
		return false;
	for (size_t i = 0; i < u->n; i += u->chunks[i]->pages)
		if (u->chunks[i] == c)
			return true;
	return false;
}

/*
 * Play @x's release on the driver thread's clock now: after the unmaps of
 * its handle's old mappings and its fence, when the thread is free.
 */
static void play_destroy(struct tp_vmm *vmm, struct tp_deferred *d,
			 struct tp_deferred_destroy *x)
{
	uint64_t after = tp_vmm_now_ns(vmm), t;
	struct tp_deferred_unmap *u;

	for (u = d->head; u; u = u->next) {
		if (!tp_deferred_maps_handle(u, x->c))
			continue;
		t = play(vmm, u);
		if (t > after)
			after = t;
	}
	tp_vmm_background(true);
	vmm->ops->worker_begin(vmm, x->c->fence, after);
	destroy_call(vmm, x);
	x->done_at = vmm->ops->worker_end(vmm);
	tp_vmm_background(false);
}

/* The releases the played thread has done by now (their unmaps first). */
static void play_reap_destroys(struct tp_vmm *vmm, struct tp_deferred *d)
{
	uint64_t now = tp_vmm_now_ns(vmm);
	struct tp_deferred_destroy **link = &d->destroys;

	while (*link) {
		if ((*link)->done_at <= now && !(*link)->c->old_maps)
			destroy_finish(vmm, d, link);
		else
			link = &(*link)->next;
	}
}

void tp_deferred_play_wait(struct tp_vmm *vmm, uint64_t t, const char *why)
{
	uint64_t t0 = tp_vmm_now_ns(vmm);

	vmm->ops->wait_until(vmm, t);
	if (t > t0 && vmm->obs && vmm->obs->wait)
		vmm->obs->wait(vmm->obs->priv, t0, t, why);
}

static void play_wait_until(struct tp_vmm *vmm, uint64_t t)
{
	tp_deferred_play_wait(vmm, t, "the driver thread");
}

/* Wait until the played thread has done one more entry: the first. */
static void play_wait_next(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_deferred_unmap *u, *first = NULL;
	uint64_t t, best = UINT64_MAX;

	/* The one done first, or ready first when none was played. */
	for (u = d->head; u; u = u->next) {
		t = u->done_at ? u->done_at : ready_at(vmm, u);
		if (t < best) {
			best = t;
			first = u;
		}
	}
	play_wait_until(vmm, play(vmm, first));
	play_reap(vmm, d);
}

static bool not_begun(struct tp_vmm *vmm, const struct tp_deferred *d,
		      struct tp_deferred_unmap *u)
{
	switch (d->mode) {
	case TP_DEFERRED_THREAD:
		return !u->busy;
	case TP_DEFERRED_PLAYED:
		return !u->done_at && ready_at(vmm, u) > tp_vmm_now_ns(vmm);
	default:
		return true;
	}
}

/* --- the driver thread --------------------------------------------------- */

/*
 * Whether @ev (NULL: none) has completed, for the driver thread. A query
 * that fails is the device's error: kept in d->error, since nothing
 * completes after it, and said once.
 */
static bool event_done(struct tp_vmm *vmm, struct tp_deferred *d,
		       struct tp_event *ev)
{
	int ret;

	if (!ev)
		return true;
	ret = vmm->ops->event_query(vmm, ev);
	if (ret && ret != -EAGAIN) {
		d->error = ret;
		tp_log(TP_LOG_ERROR, "vmm: an event query failed (%s): the driver thread's unmaps and releases stop",
		       strerror(-ret));
	}
	return !ret;
}

/*
 * The first entry whose event has completed and whose mapping is made (no
 * map queued before it over its pages still to do), or NULL: none is, or
 * a query failed (d->error set; nothing completes after that).
 */
static struct tp_deferred_unmap *first_ready(struct tp_vmm *vmm,
					     struct tp_deferred *d)
{
	struct tp_deferred_unmap *u;

	for (u = d->head; u && !d->error; u = u->next)
		if (!tp_map_ahead_over(vmm, d, u->va,
				       u->n * vmm->granularity, u->order) &&
		    event_done(vmm, d, u->ev))
			return u;
	return NULL;
}

/*
 * The first handle released behind that may go now: no old mapping of it
 * left and its fence complete; NULL if none (or a query failed: d->error).
 */
static struct tp_deferred_destroy *first_destroy(struct tp_vmm *vmm,
						 struct tp_deferred *d)
{
	struct tp_deferred_destroy *x;

	for (x = d->destroys; x && !d->error; x = x->next)
		if (!x->c->old_maps && event_done(vmm, d, x->c->fence))
			return x;
	return NULL;
}

/* Release @x's handle unlocked, then finish it under the lock. */
static void destroy_run(struct tp_vmm *vmm, struct tp_deferred *d,
			struct tp_deferred_destroy *x)
{
	struct tp_deferred_destroy **link;

	x->busy = true;
	pthread_mutex_unlock(&d->lock);
	destroy_call(vmm, x);
	pthread_mutex_lock(&d->lock);
	for (link = &d->destroys; *link != x; link = &(*link)->next)
		;
	destroy_finish(vmm, d, link);
}

/*
 * The thread takes the entries as their events complete, one at a time.
 * With none complete it looks again after DRIVER_POLL_NS, or when one is
 * queued: a driver has no wait for the first of several events.
 */
#define DRIVER_POLL_NS	50000

static void *driver_thread(void *arg)
{
	struct tp_vmm *vmm = arg;
	struct tp_deferred *d = vmm->deferred;
	struct tp_deferred_unmap *u, **link;
	struct tp_deferred_destroy *x;
	struct timespec ts;
	uintptr_t va, end;

	tp_vmm_background(true);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		if ((!d->head && !d->destroys &&
		     !tp_map_ahead_pending(vmm, d)) ||
		    d->error) {
			if (d->stop)
				break;
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		/* Maps first: the device may be waiting for them. */
		if (tp_map_ahead_run(vmm, d))
			continue;
		/* A release first: the caller may be waiting for the room. */
		x = first_destroy(vmm, d);
		if (x) {
			destroy_run(vmm, d, x);
			pthread_cond_broadcast(&d->cond);
			continue;
		}
		u = d->error ? NULL : first_ready(vmm, d);
		if (!u && d->error) {
			/* Waiters return the error. */
			pthread_cond_broadcast(&d->cond);
			continue;
		}
		if (!u) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += DRIVER_POLL_NS;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&d->cond, &d->lock, &ts);
			continue;
		}
		u->busy = true;
		pthread_mutex_unlock(&d->lock);
		unmap_entry(vmm, u);
		pthread_mutex_lock(&d->lock);
		for (link = &d->head; *link != u; link = &(*link)->next)
			;
		va = u->va;
		end = u->va + u->n * vmm->granularity;
		finish(vmm, d, link);
		if (d->releases)
			release_ranges_in(vmm, d, false, va, end);
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int tp_deferred_start(struct tp_vmm *vmm, struct tp_deferred *d)
{
	int ret;

	if (d->mode != TP_DEFERRED_POLL)
		return 0;
	if (vmm->ops->plays_worker) {
		/* Played, or, where the backend's costs model no such
		 * thread, left to the caller's polls. */
		if (vmm->ops->plays_worker(vmm))
			d->mode = TP_DEFERRED_PLAYED;
		return 0;
	}
	d->stop = false;
	ret = -pthread_create(&d->thread, NULL, driver_thread, vmm);
	if (!ret)
		d->mode = TP_DEFERRED_THREAD;
	return ret;
}

static bool any_busy(const struct tp_deferred *d)
{
	if (d->ahead.busy)
		return true;
	for (const struct tp_deferred_unmap *u = d->head; u; u = u->next)
		if (u->busy)
			return true;
	for (const struct tp_deferred_destroy *x = d->destroys; x;
	     x = x->next)
		if (x->busy)
			return true;
	return false;
}

void tp_deferred_quiesce(struct tp_deferred *d)
{
	while (d->mode == TP_DEFERRED_THREAD && any_busy(d))
		pthread_cond_wait(&d->cond, &d->lock);
}

void tp_deferred_stop(struct tp_deferred *d)
{
	if (d->mode != TP_DEFERRED_THREAD)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->mode = TP_DEFERRED_POLL;
}

/* --- what the caller's thread asks --------------------------------------- */

size_t tp_deferred_reap(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_deferred_unmap **link = &d->head;
	size_t done = 0;

	if (d->mode == TP_DEFERRED_THREAD)
		return 0;	/* the driver thread's work */
	if (d->mode == TP_DEFERRED_PLAYED)
		return play_reap(vmm, d);
	while (*link) {
		if ((!(*link)->ev || tp_vmm_event_query(vmm, (*link)->ev) == 0) &&
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
	struct tp_deferred_unmap *u = d->head;
	size_t nr;
	int ret;

	if (!u)
		return -ENOENT;
	switch (d->mode) {
	case TP_DEFERRED_THREAD:
		/* Whichever the thread does next. */
		nr = d->nr;
		while (d->nr == nr && !d->error)
			pthread_cond_wait(&d->cond, &d->lock);
		return d->error;
	case TP_DEFERRED_PLAYED:
		play_wait_next(vmm, d);
		return 0;
	default:
		break;
	}
	ret = u->ev ? tp_vmm_event_sync(vmm, u->ev) : 0;
	if (ret)
		return ret;
	/* Known complete now: no need to ask again. */
	ret = complete(vmm, d, &d->head);
	tp_deferred_reap(vmm, d);
	return ret;
}

int tp_deferred_wait_destroy(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_deferred_destroy *x;
	uint64_t first = UINT64_MAX;
	size_t nr = d->nr_destroys;

	if (!nr)
		return -ENOENT;
	switch (d->mode) {
	case TP_DEFERRED_THREAD:
		while (d->nr_destroys == nr && !d->error)
			pthread_cond_wait(&d->cond, &d->lock);
		return d->error;
	case TP_DEFERRED_PLAYED:
		for (x = d->destroys; x; x = x->next)
			if (x->done_at < first)
				first = x->done_at;
		play_wait_until(vmm, first);
		play_reap(vmm, d);
		return d->nr_destroys < nr ? 0 : -EAGAIN;
	default:
		return -ENOENT;
	}
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
		/* One thread does them in order: up to this one. */
		if (d->mode != TP_DEFERRED_POLL) {
			ret = tp_deferred_wait_oldest(vmm, d);
			if (ret)
				return ret;
			link = &d->head;
			continue;
		}
		ret = u->ev ? tp_vmm_event_sync(vmm, u->ev) : 0;
		if (ret)
			return ret;
		ret = complete(vmm, d, link);
		if (ret)
			return ret;
	}
	if (d->releases && d->mode != TP_DEFERRED_THREAD)
		release_ranges(vmm, d, false);
	return 0;
}

void tp_deferred_free(struct tp_vmm *vmm, struct tp_deferred *d)
{
	if (!d)
		return;
	tp_deferred_stop(d);
	tp_map_ahead_finish(vmm, d);
	while (d->head) {
		struct tp_deferred_unmap *u = d->head;

		if (d->mode == TP_DEFERRED_PLAYED) {
			play_wait_next(vmm, d);
			continue;
		}
		if (u->ev)
			tp_vmm_event_sync(vmm, u->ev);
		if (complete(vmm, d, &d->head)) {
			/* The backend's close tears the mappings down. */
			d->head = u->next;
			tp_vmm_event_put(vmm, u->ev);
			free(u);
		}
	}
	/* The handles released behind, now that no old mapping is left. */
	while (d->destroys) {
		struct tp_deferred_destroy *x = d->destroys;

		if (!x->done_at) {
			if (x->c->fence)
				tp_vmm_event_sync(vmm, x->c->fence);
			destroy_call(vmm, x);
		}
		destroy_finish(vmm, d, &d->destroys);
	}
	release_ranges(vmm, d, true);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
