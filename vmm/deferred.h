/* SPDX-License-Identifier: MIT */
/*
 * Deferred unmaps: a run of pages is unmapped, and its chunks returned to
 * the pool, only once the event of the last work that touched it has
 * completed. The list is reaped by polling events, never by synchronising
 * the device (cuMemUnmap does not reliably wait for in-flight work); or,
 * with ordered reuse (the chunks back already), by a driver thread of the
 * library's own (played on a clock of the backend's on sim).
 *
 * Every function but tp_deferred_new/free/start is called with the lock
 * held (tp_deferred_lock), which also guards the pool: the driver thread
 * counts the handles' old mappings down.
 */
#ifndef TP_VMM_DEFERRED_H
#define TP_VMM_DEFERRED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/map_ahead.h"
#include "vmm/vmm.h"

struct tp_deferred_unmap {
	struct tp_deferred_unmap *next;
	uintptr_t va;
	size_t n;
	struct tp_event *ev;		/* a reference of our own */
	/*
	 * The handles go back to the pool once unmapped; else they went
	 * back already (ordered reuse) and only this mapping of theirs
	 * waits (counted in their old_maps).
	 */
	bool returns;
	bool busy;			/* the driver thread has it */
	uint64_t queued_at;		/* played: when it was queued */
	uint64_t order;			/* among the unmaps and maps queued */
	uint64_t done_at;		/* played: when its unmap is done */
	/* Without @returns: each page's handle's takes when it was left
	 * (a rescue finds them unchanged), after @chunks. */
	uint32_t *takes;
	struct tp_chunk *chunks[];	/* n of them, one per page */
};

/* A range to release once no pending unmap overlaps it. */
struct tp_deferred_release {
	struct tp_deferred_release *next;
	uintptr_t va;
	size_t len;
};

/*
 * A handle released behind (re-carving): by the driver thread once no
 * old mapping of it is left and its last use is done; @done then gives
 * the pool what it kept (under the lock).
 */
struct tp_deferred_destroy {
	struct tp_deferred_destroy *next;
	struct tp_chunk *c;
	void (*done)(struct tp_vmm *vmm, struct tp_chunk *c);
	bool busy;			/* the driver thread has it */
	uint64_t done_at;		/* played: when its release is done */
	uint64_t seq;			/* the order queued, from 1 */
};

enum tp_deferred_mode {
	TP_DEFERRED_POLL,	/* reaped where the caller polls */
	TP_DEFERRED_THREAD,	/* done by the driver thread */
	TP_DEFERRED_PLAYED,	/* the backend plays that thread (sim) */
};

struct tp_deferred {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* an entry done, or one to do */
	enum tp_deferred_mode mode;
	pthread_t thread;
	bool stop;
	struct tp_deferred_unmap *head, **tail;	/* FIFO, oldest first */
	size_t nr;			/* entries */
	size_t chunks;			/* chunks they will return */
	struct tp_deferred_release *releases;	/* any order */
	size_t nr_releases;
	/*
	 * Unmap entries gone (done or rescued), and how many were when the
	 * releases were last looked at: only an entry gone can free one.
	 */
	uint64_t gone, gone_seen;
	struct tp_deferred_destroy *destroys;	/* oldest first */
	size_t nr_destroys;
	uint64_t destroys_queued;		/* ever */
	/*
	 * Unmaps and maps made ahead, numbered as queued: one of either
	 * waits for the other kind queued before it over the same pages.
	 */
	uint64_t order;
	/*
	 * The error an event query of the driver thread's met (the device
	 * failed): sticky, since no entry can complete after it; every
	 * wait returns it instead of waiting for ever.
	 */
	int error;
	/* The maps the driver thread makes ahead (map_ahead.h). */
	struct tp_map_ahead ahead;
};

/**
 * tp_deferred_new() - an empty list. Return: the list, or NULL (ENOMEM).
 */
struct tp_deferred *tp_deferred_new(void);

/**
 * tp_deferred_free() - stop the driver thread, wait for every pending
 * unmap, complete it, and free the list. Used at close, when the device
 * may be waited for. Lock not held.
 */
void tp_deferred_free(struct tp_vmm *vmm, struct tp_deferred *d);

/**
 * tp_deferred_start() - hand the unmaps of old mappings to the driver
 * thread (ordered reuse: no entry returns chunks), or to the backend's
 * played one. Lock not held, no entry queued yet.
 * Return: 0, or -errno when the thread cannot start (polled then).
 */
int tp_deferred_start(struct tp_vmm *vmm, struct tp_deferred *d);

/* Wait until the driver thread has no job in hand. Lock held. */
void tp_deferred_quiesce(struct tp_deferred *d);

/* Stop the driver thread once it has done every entry. Lock not held. */
void tp_deferred_stop(struct tp_deferred *d);

/* The lock over the list, the releases and the pool. */
void tp_deferred_lock(struct tp_deferred *d);
void tp_deferred_unlock(struct tp_deferred *d);

/**
 * tp_deferred_add() - queue the unmap of the run of @n pages at @va (the
 * per-page array @chunks) after @ev; with @returns its handles go back to
 * the pool then, else they are back already and only the mapping waits.
 * Return: 0, -ENOMEM (nothing queued, no reference taken).
 */
int tp_deferred_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		    struct tp_chunk *const *chunks, size_t n,
		    struct tp_event *ev, bool returns);

/**
 * tp_deferred_rescue() - cancel the pending unmaps lying whole within
 * [@va, @va + @n pages) that have not begun and whose handles no one has
 * taken since (ordered reuse), and give their handles back: off the
 * pool, mapped at their pages again, into @out (page i of the run at
 * @out[i]). Return: the pages rescued.
 */
size_t tp_deferred_rescue(struct tp_vmm *vmm, struct tp_deferred *d,
			  uintptr_t va, size_t n, struct tp_chunk **out);

/**
 * tp_deferred_overlaps() - whether a pending unmap overlaps [@va, @va +
 * @len).
 */
bool tp_deferred_overlaps(const struct tp_vmm *vmm,
			  const struct tp_deferred *d, uintptr_t va,
			  size_t len);

/**
 * tp_deferred_overlaps_before() - whether a pending unmap queued before
 * @order overlaps [@va, @va + @len).
 */
bool tp_deferred_overlaps_before(const struct tp_vmm *vmm,
				 const struct tp_deferred *d, uintptr_t va,
				 size_t len, uint64_t order);

/**
 * tp_deferred_maps_handle() - whether @u unmaps an old mapping of the
 * handle @c (ordered reuse).
 */
bool tp_deferred_maps_handle(const struct tp_deferred_unmap *u,
			     const struct tp_chunk *c);

/**
 * tp_deferred_play_wait() - the caller waits for the played driver thread
 * until @t: a wait on the device for the trace's waits track, named @why
 * (a literal), as an event sync would be.
 */
void tp_deferred_play_wait(struct tp_vmm *vmm, uint64_t t, const char *why);

/**
 * tp_deferred_play_over() - played: play the pending unmaps overlapping
 * [@va, @va + @len) on the driver thread's clock. Return: when the last
 * is done there (0: none).
 */
uint64_t tp_deferred_play_over(struct tp_vmm *vmm, struct tp_deferred *d,
			       uintptr_t va, size_t len);

/**
 * tp_deferred_add_release() - release [@va, @va + @len) once no pending
 * unmap overlaps it (reaped by tp_deferred_reap()).
 * Return: 0, -ENOMEM (nothing queued).
 */
int tp_deferred_add_release(struct tp_vmm *vmm, struct tp_deferred *d,
			    uintptr_t va, size_t len);

/**
 * tp_deferred_behind() - whether a handle can be released off the
 * caller's thread: a driver thread does it, or the backend plays one.
 */
bool tp_deferred_behind(const struct tp_deferred *d);

/**
 * tp_deferred_add_destroy() - release the free handle @c behind, once its
 * old mappings are unmapped and its fence completed, then call @done
 * (lock held). Only where tp_deferred_behind(). Return: 0, -ENOMEM
 * (nothing queued).
 */
int tp_deferred_add_destroy(struct tp_vmm *vmm, struct tp_deferred *d,
			    struct tp_chunk *c,
			    void (*done)(struct tp_vmm *vmm, struct tp_chunk *c));

/**
 * tp_deferred_wait_destroy() - block until one more handle released
 * behind is gone. Return: 0, -ENOENT when none is pending, or the
 * device's error.
 */
int tp_deferred_wait_destroy(struct tp_vmm *vmm, struct tp_deferred *d);

/**
 * tp_deferred_reap() - complete every entry whose event has completed,
 * then release the deferred ranges no pending unmap overlaps any more.
 * Return: the number of unmaps completed.
 */
size_t tp_deferred_reap(struct tp_vmm *vmm, struct tp_deferred *d);

/**
 * tp_deferred_wait_oldest() - block until one more pending unmap is done:
 * polled, the oldest (on its event, then reap); by the driver thread,
 * whichever it does next. Return: 0, -ENOENT when none is pending, or
 * the event's error.
 */
int tp_deferred_wait_oldest(struct tp_vmm *vmm, struct tp_deferred *d);

/**
 * tp_deferred_flush_range() - wait for and complete every entry that
 * overlaps [@va, @va + @len), so that the range can be mapped or released
 * again. Return: 0 or the first event error.
 */
int tp_deferred_flush_range(struct tp_vmm *vmm, struct tp_deferred *d,
			    uintptr_t va, size_t len);

#endif /* TP_VMM_DEFERRED_H */
