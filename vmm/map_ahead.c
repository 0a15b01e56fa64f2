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
#include "vmm/deferred.h"
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
			bool want)
{
	int ret;

	if (!want || d->mode == TP_DEFERRED_POLL || !vmm->ops->gate_open)
		return;
	ret = vmm->ops->gate_open(vmm);
	if (ret) {
		tp_log(TP_LOG_INFO, "vmm: maps are made on the caller's thread: the %s backend's streams cannot wait for the driver thread (%s)",
		       vmm->ops->name, strerror(-ret));
		return;
	}
	d->ahead.on = true;
}

int tp_map_ahead_error(const struct tp_deferred *d)
{
	return __atomic_load_n(&d->ahead.error, __ATOMIC_ACQUIRE);
}

/* The job numbered @seq done: its gate opens. */
static void posted(struct tp_vmm *vmm, struct tp_map_ahead *a, uint32_t seq)
{
	vmm->ops->gate_post(vmm, seq);
	__atomic_store_n(&a->done, seq, __ATOMIC_RELEASE);
}

/* Played: the thread makes the job now, on its own clock. */
static int play_job(struct tp_vmm *vmm, struct tp_map_ahead *a, uintptr_t va,
		    struct tp_chunk *const *c, size_t n)
{
	int ret;

	tp_vmm_background(true);
	vmm->ops->worker_begin(vmm, NULL, tp_vmm_now_ns(vmm));
	ret = tp_vmm_do_map(vmm, va, c, n, false);
	if (!ret)
		posted(vmm, a, a->queued + 1);
	a->played_at = vmm->ops->worker_end(vmm);
	tp_vmm_background(false);
	if (!ret)
		a->queued++;
	return ret;
}

int tp_map_ahead_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		     struct tp_chunk *const *c, size_t n)
{
	struct tp_map_ahead *a = &d->ahead;
	struct tp_map_job *job;

	if (d->mode == TP_DEFERRED_PLAYED)
		return play_job(vmm, a, va, c, n);
	job = malloc(sizeof(*job) + n * sizeof(job->chunks[0]));
	if (!job)
		return -ENOMEM;
	job->next = NULL;
	job->va = va;
	job->n = n;
	memcpy(job->chunks, c, n * sizeof(c[0]));
	job->seq = a->queued + 1;
	__atomic_store_n(&a->queued, job->seq, __ATOMIC_RELEASE);
	*a->tail = job;
	a->tail = &job->next;
	pthread_cond_broadcast(&d->cond);
	return 0;
}

bool tp_map_ahead_pending(const struct tp_deferred *d)
{
	return d->ahead.head && !d->ahead.error;
}

bool tp_map_ahead_run(struct tp_vmm *vmm, struct tp_deferred *d)
{
	struct tp_map_ahead *a = &d->ahead;
	struct tp_map_job *job;
	bool did = false;
	int ret;

	while (tp_map_ahead_pending(d)) {
		job = a->head;
		a->head = job->next;
		if (!a->head)
			a->tail = &a->head;
		a->busy = true;
		pthread_mutex_unlock(&d->lock);
		ret = tp_vmm_do_map(vmm, job->va, job->chunks, job->n, false);
		if (!ret)
			posted(vmm, a, job->seq);
		pthread_mutex_lock(&d->lock);
		a->busy = false;
		if (ret) {
			__atomic_store_n(&a->error, ret, __ATOMIC_RELEASE);
			tp_log(TP_LOG_ERROR, "vmm: the driver thread's map of %zu pages at %#lx failed (%s): the device's work waits behind it, and every later sync fails",
			       job->n, (unsigned long)job->va, strerror(-ret));
		}
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
		if (a->played_at > tp_vmm_now_ns(vmm))
			vmm->ops->wait_until(vmm, a->played_at);
		return 0;
	}
	while (!a->error && !d->error &&
	       !at_or_after(__atomic_load_n(&a->done, __ATOMIC_ACQUIRE),
			    a->queued))
		pthread_cond_wait(&d->cond, &d->lock);
	return a->error ? a->error : d->error;
}

int tp_map_ahead_gate(struct tp_vmm *vmm, struct tp_deferred *d,
		      enum tp_stream s)
{
	struct tp_map_ahead *a = &d->ahead;
	uint32_t q;
	int ret;

	if (!a->on)
		return 0;
	ret = tp_map_ahead_error(d);
	if (ret)
		return ret;
	q = __atomic_load_n(&a->queued, __ATOMIC_ACQUIRE);
	if (a->waited[s] == q)
		return 0;
	if (!vmm->ops->gate_passed(vmm, q)) {
		ret = vmm->ops->gate_stream(vmm, s, q);
		if (ret)
			return ret;
		vmm->stats.gate_waits++;
	}
	a->waited[s] = q;
	return 0;
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
	/* Every job made (a repeat), or the device failed: open it. */
	vmm->ops->gate_post(vmm, a->queued);
	a->on = false;
}
