/* SPDX-License-Identifier: MIT */
/*
 * Deferred unmaps: a run of pages is unmapped, and its chunks returned to
 * the pool, only once the event of the last work that touched it has
 * completed. The list is reaped by polling events, never by synchronising
 * the device (cuMemUnmap does not reliably wait for in-flight work).
 */
#ifndef TP_VMM_DEFERRED_H
#define TP_VMM_DEFERRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	struct tp_chunk *chunks[];	/* n of them, one per page */
};

/* A range to release once no pending unmap overlaps it. */
struct tp_deferred_release {
	struct tp_deferred_release *next;
	uintptr_t va;
	size_t len;
};

struct tp_deferred {
	struct tp_deferred_unmap *head, **tail;	/* FIFO, oldest first */
	size_t nr;			/* entries */
	size_t chunks;			/* chunks they will return */
	struct tp_deferred_release *releases;	/* any order */
	size_t nr_releases;
};

/**
 * tp_deferred_new() - an empty list. Return: the list, or NULL (ENOMEM).
 */
struct tp_deferred *tp_deferred_new(void);

/**
 * tp_deferred_free() - wait for every pending unmap, complete it, and free
 * the list. Used at close, when the device may be waited for.
 */
void tp_deferred_free(struct tp_vmm *vmm, struct tp_deferred *d);

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
 * tp_deferred_overlaps() - whether a pending unmap overlaps [@va, @va +
 * @len).
 */
bool tp_deferred_overlaps(const struct tp_vmm *vmm,
			  const struct tp_deferred *d, uintptr_t va,
			  size_t len);

/**
 * tp_deferred_add_release() - release [@va, @va + @len) once no pending
 * unmap overlaps it (reaped by tp_deferred_reap()).
 * Return: 0, -ENOMEM (nothing queued).
 */
int tp_deferred_add_release(struct tp_vmm *vmm, struct tp_deferred *d,
			    uintptr_t va, size_t len);

/**
 * tp_deferred_reap() - complete every entry whose event has completed,
 * then release the deferred ranges no pending unmap overlaps any more.
 * Return: the number of unmaps completed.
 */
size_t tp_deferred_reap(struct tp_vmm *vmm, struct tp_deferred *d);

/**
 * tp_deferred_wait_oldest() - block on the oldest entry's event, then
 * reap. Return: 0, -ENOENT when none is pending, or the event's error.
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
