/* SPDX-License-Identifier: MIT */
/*
 * Maps made ahead by the library's driver thread: the queue, the thread's
 * part and the gate (see map_ahead.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/deferred.h"
#include "vmm/extent_pool.h"
#include "vmm/map_ahead.h"

/* Whether job @b is @a or later (job numbers wrap). */
static bool at_or_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

void tp_map_ahead_init(struct tp_map_ahead *a)
{
	memset(a, 0, sizeof(*a));
	a->tail = &a->head;
}

void tp_map_ahead_start(struct tp_vmm *vmm, struct tp_deferred *d,
			int want)
{
	if (want == TP_MAP_AHEAD_OFF ||
	    (want == TP_MAP_AHEAD_AUTO && vmm->ops->device == TP_DEVICE_CPU) ||
	    d->mode == TP_DEFERRED_POLL)
		return;
	if (vmm->ops->can_map_ahead && !vmm->ops->can_map_ahead(vmm)) {
		tp_log(TP_LOG_INFO, "vmm: maps are made on the caller's thread: the %s backend plays no driver thread here",
		       vmm->ops->name);
		return;
	}
	d->ahead.on = true;
	if (vmm->map_gate == TP_MAP_GATE_HOST || !vmm->ops->map_gate_open)
		return;
	if (vmm->ops->map_gate_open(vmm)) {
		tp_log(TP_LOG_INFO, "vmm: streams cannot wait for maps on the device here: the caller waits");
		return;
	}
	d->ahead.device = true;
}

int tp_map_ahead_error(const struct tp_deferred *d)
{
	return __atomic_load_n(&d->ahead.error, __ATOMIC_ACQUIRE);
}

/* The job numbered @seq done: work over its run may be issued, and
 * run where it waits on the device. */
static void posted(struct tp_vmm *vmm, struct tp_map_ahead *a, uint32_t seq)
{
	__atomic_store_n(&a->done, seq, __ATOMIC_RELEASE);
	if (a->device && vmm->ops->map_posted)
		vmm->ops->map_posted(vmm, seq);
}

/* Whether the run of @n pages @c has a handle still to make. */
static bool has_unborn(struct tp_chunk *const *c, size_t n)
{
	for (size_t i = 0; i < n; i += c[i]->pages)
		if (c[i]->flags & TP_CHUNK_UNBORN)
			return true;
	return false;
}

/*
 * Make the handles of the run still to be made, on the thread doing the
 * job (lock not held). Return: 0, or the first failure, *@made set to
 * the pages of the run up to it.
 */
static int make_handles(struct tp_vmm *vmm, struct tp_chunk *const *c,
			size_t n, size_t *made)
{
	int ret = 0;
	size_t i;

	for (i = 0; i < n && !ret; i += c[i]->pages)
		if (c[i]->flags & TP_CHUNK_UNBORN)
			ret = tp_vmm_do_chunk_create(vmm, c[i], false);
	*made = ret ? i - c[i - 1]->pages : n;
	return ret;
}

/*
 * Chunks of handles released behind and not gone at @t: on a thread of
 * its own, those not yet done; played, those done later on its clock
 * (the caller reaps them only once its own clock is there).
 */
static size_t dying_at(const struct tp_vmm *vmm, const struct tp_deferred *d,
		       uint64_t t)
{
	size_t n = 0;

	if (d->mode != TP_DEFERRED_PLAYED)
		return vmm->pool->ext->dying;
	for (const struct tp_deferred_destroy *x = d->destroys; x;
	     x = x->next)
		if (!x->done_at || x->done_at > t)
			n += x->c->pages;
	return n;
}

/* The handles made in the first @made pages, at @t, hold memory now.
 * Locked. */
static void born(struct tp_vmm *vmm, const struct tp_deferred *d,
		 struct tp_chunk *const *c, size_t made, uint64_t t)
{
	size_t dying = dying_at(vmm, d, t);

	for (size_t i = 0; i < made; i += c[i]->pages)
		tp_extent_pool_born(vmm, vmm->pool->ext, c[i], dying);
}

/*
 * The map of a job and the handles it makes; on failure of the map, the
 * handles made stay (free ones hold memory like any other).
 */
static int job_calls(struct tp_vmm *vmm, uintptr_t va,
		     struct tp_chunk *const *c, size_t n, bool unborn,
		     size_t *made)
{
	int ret = 0;

	*made = 0;
	if (unborn)
		ret = make_handles(vmm, c, n, made);
	return ret ? ret : tp_vmm_do_map(vmm, va, c, n, false);
}

/* Whether the release @x made room for a handle of the run @c. */
static bool room_for(const struct tp_deferred_destroy *x,
		     struct tp_chunk *const *c, size_t n)
{
	for (size_t i = 0; i < n; i += c[i]->pages)
		if ((c[i]->flags & TP_CHUNK_UNBORN) &&
		    x->seq > c[i]->after_lo && x->seq <= c[i]->after_hi)
			return true;
	return false;
}

/* Played: when the releases that made room for the run @c are done
 * (each is played when queued). */
static uint64_t room_made(const struct tp_deferred *d,
			  struct tp_chunk *const *c, size_t n)
{
	uint64_t t = 0;

	for (const struct tp_deferred_destroy *x = d->destroys; x;
	     x = x->next)
		if (x->done_at > t && room_for(x, c, n))
			t = x->done_at;
	return t;
}

/*
 * Played: the thread makes the job now, on the clock of its maps, as soon
 * as it is queued, the maps before it are done and the old mappings over
 * its range unmapped; one that makes handles also after the releases that
 * made room for them.
 */
static int play_job(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		    struct tp_chunk *const *c, size_t n)
{
	struct tp_map_ahead *a = &d->ahead;
	bool unborn = has_unborn(c, n);
	uint64_t start = tp_vmm_now_ns(vmm), t;
	size_t made;
	int ret;

	/* After the old mappings over the range, and the room made. */
	t = tp_deferred_play_over(vmm, d, va, n * vmm->granularity);
	if (t > start)
		start = t;
	t = unborn ? room_made(d, c, n) : 0;
	if (t > start)
		start = t;
	tp_vmm_background(true);
	if (vmm->ops->worker_lane)
		vmm->ops->worker_lane(vmm, 1);
	vmm->ops->worker_begin(vmm, NULL, start);
	start = tp_vmm_now_ns(vmm);	/* the played thread's clock */
	ret = job_calls(vmm, va, c, n, unborn, &made);
	if (!ret)
		posted(vmm, a, a->queued + 1);
	a->played_at = vmm->ops->worker_end(vmm);
	if (vmm->ops->worker_lane)
		vmm->ops->worker_lane(vmm, 0);
	tp_vmm_background(false);
	if (unborn)
		born(vmm, d, c, made, start);
	if (!ret)
		a->queued++;
	return ret;
}

/* Whether @u unmaps a handle released to make room for the run @c. */
static bool holds_room(const struct tp_deferred *d,
		       const struct tp_deferred_unmap *u,
		       struct tp_chunk *const *c, size_t n)
{
	for (const struct tp_deferred_destroy *x = d->destroys; x;
	     x = x->next)
		if (room_for(x, c, n) && tp_deferred_maps_handle(u, x->c))
			return true;
	return false;
}

/*
 * The events the map of the run @c at [@va, @va + @len) would wait for
 * on the driver thread: of the old mappings over the range, and of the
 * handles released to make room for its handles (their fences and old
 * mappings). Into @ev (references taken), at most @max; return how many.
 */
static size_t work_before(struct tp_vmm *vmm, struct tp_deferred *d,
			  uintptr_t va, size_t len, struct tp_chunk *const *c,
			  size_t n, struct tp_event **ev, size_t max)
{
	bool unborn = has_unborn(c, n);
	struct tp_deferred_unmap *u;
	struct tp_deferred_destroy *x;
	size_t k = 0;

	for (u = d->head; u && k < max; u = u->next)
		if (u->ev && !u->busy &&
		    ((u->va < va + len && va < u->va + u->n * vmm->granularity) ||
		     (unborn && holds_room(d, u, c, n))))
			ev[k++] = tp_vmm_event_get(u->ev);
	for (x = d->destroys; unborn && x && k < max; x = x->next)
		if (x->c->fence && !x->busy && room_for(x, c, n))
			ev[k++] = tp_vmm_event_get(x->c->fence);
	return k;
}

#define WORK_BEFORE_MAX	64

int tp_map_ahead_wait_work(struct tp_vmm *vmm, struct tp_deferred *d,
			   uintptr_t va, struct tp_chunk *const *c, size_t n)
{
	struct tp_event *ev[WORK_BEFORE_MAX];
	uint64_t t, last = 0;
	size_t k;
	int ret = 0;

	if (!d->ahead.on)
		return 0;
	k = work_before(vmm, d, va, n * vmm->granularity, c, n, ev,
			WORK_BEFORE_MAX);
	if (!k)
		return 0;
	if (d->mode == TP_DEFERRED_PLAYED) {
		for (size_t i = 0; i < k; i++) {
			if (!vmm->ops->event_when(vmm, ev[i], &t) && t > last)
				last = t;
			tp_vmm_event_put(vmm, ev[i]);
		}
		tp_deferred_play_wait(vmm, last, "the memory's old work");
		return 0;
	}
	/* The driver thread goes on meanwhile. */
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; i < k; i++) {
		if (!ret) {
			tp_vmm_wait_why("the memory's old work");
			ret = tp_vmm_event_sync(vmm, ev[i]);
		}
		tp_vmm_event_put(vmm, ev[i]);
	}
	pthread_mutex_lock(&d->lock);
	return ret;
}

int tp_map_ahead_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		     struct tp_chunk *const *c, size_t n)
{
	struct tp_map_ahead *a = &d->ahead;
	struct tp_map_job *job;

	if (d->mode == TP_DEFERRED_PLAYED)
		return play_job(vmm, d, va, c, n);
	job = malloc(sizeof(*job) + n * sizeof(job->chunks[0]));
	if (!job)
		return -ENOMEM;
	job->next = NULL;
	job->va = va;
	job->n = n;
	job->unborn = has_unborn(c, n);
	job->order = ++d->order;
	memcpy(job->chunks, c, n * sizeof(c[0]));
	job->seq = a->queued + 1;
	__atomic_store_n(&a->queued, job->seq, __ATOMIC_RELEASE);
	*a->tail = job;
	a->tail = &job->next;
	pthread_cond_broadcast(&d->cond);
	return 0;
}

/*
 * Whether @job may run: the old mappings over its range are unmapped, and
 * the releases that made room for its handles are done.
 */
static bool job_ready(const struct tp_vmm *vmm, const struct tp_deferred *d,
		      const struct tp_map_job *job)
{
	if (tp_deferred_overlaps_before(vmm, d, job->va,
					job->n * vmm->granularity, job->order))
		return false;
	if (!job->unborn)
		return true;
	for (const struct tp_deferred_destroy *x = d->destroys; x;
	     x = x->next)
		if (room_for(x, job->chunks, job->n))
			return false;
	return true;
}

static bool job_over(const struct tp_vmm *vmm, const struct tp_map_job *job,
		     uintptr_t va, size_t len, uint64_t order)
{
	return job && job->order < order && job->va < va + len &&
	       va < job->va + job->n * vmm->granularity;
}

bool tp_map_ahead_over(const struct tp_vmm *vmm, const struct tp_deferred *d,
		       uintptr_t va, size_t len, uint64_t order)
{
	if (job_over(vmm, d->ahead.cur, va, len, order))
		return true;
	for (const struct tp_map_job *j = d->ahead.head; j; j = j->next)
		if (job_over(vmm, j, va, len, order))
			return true;
	return false;
}

bool tp_map_ahead_pending(const struct tp_vmm *vmm,
			  const struct tp_deferred *d)
{
	/* After a failure, where the device may wait for them, the jobs
	 * left are still done (with the spare page). */
	return d->ahead.head && (!d->ahead.error || d->ahead.device) &&
	       job_ready(vmm, d, d->ahead.head);
}

/*
 * A job the device may wait for, that failed or comes after one that
 * did: the spare page at each of its pages, and its number posted, so
 * that the work behind it runs (on garbage) and the stream is not held.
 * Lock not held.
 */
static void job_spare(struct tp_vmm *vmm, struct tp_map_ahead *a,
		      const struct tp_map_job *job)
{
	int ret = vmm->ops->map_spare ?
		  vmm->ops->map_spare(vmm, job->va, job->n) : -EOPNOTSUPP;

	if (ret)
		tp_log(TP_LOG_ERROR, "vmm: the spare page could not stand in for %zu pages at %#lx (%s): the work waiting for them faults",
		       job->n, (unsigned long)job->va, strerror(-ret));
	posted(vmm, a, job->seq);
}

bool tp_map_ahead_run(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_map_ahead *a = &d->ahead;
	struct tp_map_job *job;
	bool did = false;
	size_t made;
	int ret, failed;

	while (tp_map_ahead_pending(vmm, d)) {
		job = a->head;
		a->head = job->next;
		if (!a->head)
			a->tail = &a->head;
		a->busy = true;
		a->cur = job;
		failed = __atomic_load_n(&a->error, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&d->lock);
		made = 0;
		ret = failed ? failed :
			job_calls(vmm, job->va, job->chunks, job->n,
				  job->unborn, &made);
		if (ret && !failed)	/* before the spare lets work past */
			__atomic_store_n(&a->error, ret, __ATOMIC_RELEASE);
		if (!ret)
			posted(vmm, a, job->seq);
		else if (a->device)
			job_spare(vmm, a, job);
		pthread_mutex_lock(&d->lock);
		if (job->unborn)
			born(vmm, d, job->chunks, made, 0);
		a->busy = false;
		a->cur = NULL;
		if (ret && !failed)
			tp_log(TP_LOG_ERROR, "vmm: the driver thread's map of %zu pages at %#lx failed (%s): every later sync fails",
			       job->n, (unsigned long)job->va, strerror(-ret));
		free(job);
		did = true;
		pthread_cond_broadcast(&d->cond);
	}
	return did;
}

int tp_map_ahead_wait(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_map_ahead *a = &d->ahead;

	if (!a->on)
		return 0;
	if (d->mode == TP_DEFERRED_PLAYED) {
		tp_deferred_play_wait(vmm, a->played_at, "the driver thread");
		return 0;
	}
	while (!a->error && !d->error &&
	       !at_or_after(__atomic_load_n(&a->done, __ATOMIC_ACQUIRE),
			    a->queued))
		pthread_cond_wait(&d->cond, &d->lock);
	return a->error ? a->error : d->error;
}

/* Whether job @seq is done where the caller is (played: at its clock). */
static bool made(struct tp_vmm *vmm, const struct tp_deferred *d,
		 uint32_t seq)
{
	if (d->mode == TP_DEFERRED_PLAYED)
		return d->ahead.played_at <= tp_vmm_now_ns(vmm);
	return at_or_after(__atomic_load_n(&d->ahead.done, __ATOMIC_ACQUIRE),
			   seq);
}

/* Whether stream @s waits on the device for job @q already. */
static bool stream_waits(const struct tp_map_ahead *a, enum tp_stream s,
			 uint32_t q)
{
	return (__atomic_load_n(&a->waiting, __ATOMIC_ACQUIRE) & 1u << s) &&
	       at_or_after(__atomic_load_n(&a->waited[s], __ATOMIC_ACQUIRE),
			   q);
}

/*
 * The stream @s waits on the device for job @q, and every one before it,
 * unless it does already (checked without the lock: an op's launch asks
 * twice, before its events and in tp_vmm_launch_op()). The lock is not
 * held around the driver's call: an enqueue may block while the
 * stream's queue is full, until the driver thread, which takes the lock
 * between jobs, posts @q.
 */
static int gate_device(struct tp_vmm *vmm, struct tp_deferred *d,
		       enum tp_stream s, uint32_t q)
{
	struct tp_map_ahead *a = &d->ahead;
	int ret;

	if (stream_waits(a, s, q))
		return 0;
	/* played_at: the caller's own, where the thread is played */
	ret = vmm->ops->stream_wait_map(vmm, s, q, a->played_at);
	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	if (!stream_waits(a, s, q)) {
		__atomic_store_n(&a->waited[s], q, __ATOMIC_RELEASE);
		__atomic_or_fetch(&a->waiting, 1u << s, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->lock);
	vmm->stats.gate_waits++;
	vmm->stats.gate_device++;
	return 0;
}

int tp_map_ahead_gate(struct tp_vmm *vmm, struct tp_deferred *d,
		      enum tp_stream s, bool device)
{
	struct tp_map_ahead *a = &d->ahead;
	const struct tp_vmm_observer *obs;
	uint64_t from, to;
	uint32_t q;
	int ret;

	if (!a->on)
		return 0;
	ret = tp_map_ahead_error(d);
	if (ret)
		return ret;
	q = __atomic_load_n(&a->queued, __ATOMIC_ACQUIRE);
	if (made(vmm, d, q))
		return 0;
	if (device && a->device)
		return gate_device(vmm, d, s, q);
	/*
	 * On the host: the driver checks the addresses of a copy, a memset
	 * or a library's call when it is enqueued, so the work may not be
	 * issued before the maps it could touch are made.
	 */
	from = tp_vmm_now_ns(vmm);
	pthread_mutex_lock(&d->lock);
	if (d->mode == TP_DEFERRED_PLAYED)
		vmm->ops->wait_until(vmm, a->played_at);
	else
		while (!a->error && !d->error && !made(vmm, d, q))
			pthread_cond_wait(&d->cond, &d->lock);
	ret = a->error ? a->error : d->error;
	pthread_mutex_unlock(&d->lock);
	to = tp_vmm_now_ns(vmm);
	vmm->stats.gate_waits++;
	obs = __atomic_load_n(&vmm->obs, __ATOMIC_ACQUIRE);
	if (to > from && obs && obs->gate)
		obs->gate(obs->priv, s, from, to);
	return ret;
}

void tp_map_ahead_finish(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_map_ahead *a = &d->ahead;

	if (!a->on)
		return;
	pthread_mutex_lock(&d->lock);
	/* The thread runs every job before it stops; a failure, or the
	 * device's error, leaves the rest undone. */
	while (a->head) {
		struct tp_map_job *job = a->head;

		a->head = job->next;
		free(job);
	}
	a->tail = &a->head;
	pthread_mutex_unlock(&d->lock);
	a->on = false;
}
