/* SPDX-License-Identifier: MIT */
/*
 * Counted backend calls shared by the files of vmm/ (vmm.c, chunk_pool.c,
 * deferred.c): each one goes through the fault-injection check, is timed
 * and counted by kind. Cleanup paths use the forms that cannot be made to
 * fail, so that undoing a failed step never fails in turn.
 */
#ifndef TP_VMM_CALLS_H
#define TP_VMM_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vmm.h"

/**
 * tp_vmm_call_begin() - start a counted call of kind @k.
 * @inject: whether the fault-injection hook may fail this call.
 * Return: 0 with *@t0 set, or the injected -errno (the call must not be
 * made, and is not counted).
 */
int tp_vmm_call_begin(struct tp_vmm *vmm, enum tp_vmm_call k, bool inject,
		      uint64_t *t0);
/** tp_vmm_call_end() - count a call of kind @k begun at @t0. */
void tp_vmm_call_end(struct tp_vmm *vmm, enum tp_vmm_call k, uint64_t t0,
		     uint64_t units);

/* Counted wrappers of single backend members. */
int tp_vmm_do_chunk_create(struct tp_vmm *vmm, struct tp_chunk *c,
			   bool inject);
void tp_vmm_do_chunk_destroy(struct tp_vmm *vmm, struct tp_chunk *c);
/*
 * Map a run of @n pages (whole handles, per-page array @c, not mapped)
 * and grant access, counting the calls; on failure nothing stays mapped.
 * The caller counts the run as mapped.
 */
int tp_vmm_do_map(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
		  size_t n, bool inject);
/* Unmap a run of @n pages (whole handles, per-page array @c), counting
 * the call and chunks_mapped. */
int tp_vmm_do_unmap(struct tp_vmm *vmm, uintptr_t va,
		    struct tp_chunk *const *c, size_t n, bool inject);
/*
 * Unmap an old mapping at @va of handles that went back to the pool
 * already (ordered reuse): the call is counted, nothing else changes.
 * Never fault-injected (the cleanup of work that succeeded).
 */
int tp_vmm_do_unmap_old(struct tp_vmm *vmm, uintptr_t va,
			struct tp_chunk *const *c, size_t n);
/* Release @va now, counting the call and ranges_reserved. */
int tp_vmm_do_release(struct tp_vmm *vmm, uintptr_t va, size_t len,
		      bool inject);

/*
 * tp_vmm_background() - the calling thread makes driver calls as the
 * library's driver thread (or plays it, on sim): they count apart.
 */
void tp_vmm_background(bool on);

/** tp_vmm_mono_ns() - CLOCK_MONOTONIC in ns. */
uint64_t tp_vmm_mono_ns(void);

#endif /* TP_VMM_CALLS_H */
