/* SPDX-License-Identifier: MIT */
/*
 * Maps made ahead by the library's driver thread (vmm.map_ahead).
 *
 * The driver charges a map and an access grant per handle, tens of
 * microseconds each, and neither waits for the device. So the thread
 * issuing the ops does not make them: it queues the map of a run and goes
 * on (choosing victims, queueing copies' bookkeeping, the next maps), and
 * the driver thread makes the calls before any other job of its. The
 * issuing thread waits for the maps queued so far only where it issues
 * work on a stream before they are made (tp_map_ahead_gate()), or unmaps
 * such a run at once (rare: a failure's undo).
 *
 * For copies and memsets that wait is on the host: the driver checks
 * their addresses when they are enqueued (cuMemcpyHtoDAsync answers
 * CUDA_ERROR_INVALID_VALUE over a reservation not mapped yet), whatever
 * the stream would wait for first. A kernel's launch is not checked so:
 * an H200 ran a kernel, cuBLAS's SGEMM and cuDNN's convolution forward
 * enqueued on memory not mapped yet behind a cuStreamWaitValue32 on a
 * word the host set once it had mapped it, with the right results
 * (bench/enqueue-bench). So before an op whose launch enqueues only
 * kernels (vmm.map_gate) the stream waits on the device instead: the
 * driver thread posts each job's number in a word the device reads
 * (map_posted), the stream waits for the last job queued
 * (stream_wait_map), and the issuing thread goes on.
 *
 * A job that fails where the device may already wait for it cannot
 * leave the stream waiting forever, nor let the kernels behind it touch
 * memory not mapped: the driver thread maps a spare page of its own at
 * every page of the run (and of every later job's) and posts it. The
 * work behind computes garbage into outputs of ops issued after the
 * failure, none in place (those wait on the host, which sees the error
 * first), and the sticky error fails every later sync.
 *
 * A map over a range whose old mapping is still to be unmapped (behind
 * the work that read it) waits for that unmap on the driver thread, not
 * on the caller's.
 *
 * Jobs are numbered in the order queued and done in that order; before
 * work is issued the caller waits for the last job queued, unless it is
 * done already, so one wait covers every map the work could touch. On sim
 * the thread is played: a job runs on its clock when queued, and the
 * caller's clock waits for its end there.
 *
 * A job may also make the handles it maps (the extent pool leaves the
 * handle of a re-carve to the driver thread, TP_CHUNK_UNBORN): it waits
 * for the releases that made room for them, so the caller never waits
 * for their old mappings; with the jobs done in order, device memory
 * never passes the budget.
 *
 * A map the driver thread fails (the device's error: the handles and the
 * range were the caller's) is never followed by the work behind it,
 * which would touch unmapped memory. The failure is sticky; every later
 * sync and stream work of the vmm returns it.
 *
 * Called with the deferred list's lock held (tp_deferred_lock), which the
 * driver thread's loop holds, except where said.
 */
#ifndef TP_VMM_MAP_AHEAD_H
#define TP_VMM_MAP_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

struct tp_deferred;

struct tp_map_job {
	struct tp_map_job *next;
	uintptr_t va;
	size_t n;
	uint32_t seq;
	uint64_t order;			/* among the unmaps and maps queued */
	/*
	 * Handles to make first (TP_CHUNK_UNBORN): only once the releases
	 * queued before the job are done, so that device memory never
	 * holds more than the budget.
	 */
	bool unborn;
	struct tp_chunk *chunks[];	/* n of them, one per page */
};

struct tp_map_ahead {
	bool on;
	bool busy;			/* the driver thread has a job */
	struct tp_map_job *head, **tail;	/* FIFO, oldest first */
	struct tp_map_job *cur;		/* the one the driver thread makes */
	uint32_t queued;		/* the last job queued */
	uint32_t done;			/* the last job done (atomic) */
	uint64_t played_at;		/* played: when the last job was done */
	int error;			/* a job failed: sticky (atomic) */
	/* Streams may wait for jobs on the device (vmm.map_gate). */
	bool device;
	unsigned waiting;		/* streams with waited[] set, a mask */
	uint32_t waited[TP_NR_STREAMS];	/* the job each waits for */
};

void tp_map_ahead_init(struct tp_map_ahead *a);

/*
 * tp_map_ahead_start() - turn maps ahead on as @want (enum
 * tp_vmm_map_ahead) says, where a driver thread runs or is played and the
 * backend's streams can wait for it; auto: not on the host backend, whose
 * device is the CPU (its maps cost little, and its streams wait for the
 * driver thread by the caller waiting). Lock not held.
 */
void tp_map_ahead_start(struct tp_vmm *vmm, struct tp_deferred *d,
			int want);

/*
 * tp_map_ahead_add() - queue the map of the run of @n pages at @va (the
 * per-page array @c, whole handles, not mapped); played, make it now on
 * the played thread's clock. Return: 0; -ENOMEM (nothing queued); the
 * played calls' error (nothing mapped).
 */
int tp_map_ahead_add(struct tp_vmm *vmm, struct tp_deferred *d, uintptr_t va,
		     struct tp_chunk *const *c, size_t n);

/*
 * tp_map_ahead_wait_work() - the caller waits for the work that the map
 * of the run @c at @va would wait for on the driver thread: the work
 * still reading the old mappings over the range, and the handles
 * released to make room for its handles. The thread issuing the ops so
 * keeps pace with the device where its maps would hold the device up
 * (a stream waits for every map queued before its work, whatever it
 * touches), and the driver thread still makes the calls. Return: 0, or
 * the device's error.
 */
int tp_map_ahead_wait_work(struct tp_vmm *vmm, struct tp_deferred *d,
			   uintptr_t va, struct tp_chunk *const *c, size_t n);

/*
 * tp_map_ahead_over() - whether a map queued before @order over
 * [@va, @va + @len) is still to be made: an unmap of that mapping waits.
 */
bool tp_map_ahead_over(const struct tp_vmm *vmm, const struct tp_deferred *d,
		       uintptr_t va, size_t len, uint64_t order);

/* Whether the driver thread has a job of this kind it can do now. */
bool tp_map_ahead_pending(const struct tp_vmm *vmm,
			  const struct tp_deferred *d);

/*
 * tp_map_ahead_run() - the driver thread makes every queued map, oldest
 * first, the lock dropped around the calls, and wakes the waiters after
 * each. Return: whether it made any.
 */
bool tp_map_ahead_run(struct tp_vmm *vmm, struct tp_deferred *d);

/*
 * tp_map_ahead_wait() - the caller's thread waits until every map queued
 * is made. Return: 0, or the error that stops them.
 */
int tp_map_ahead_wait(struct tp_vmm *vmm, struct tp_deferred *d);

/*
 * tp_map_ahead_gate() - before work is issued on @s: where the maps
 * queued so far are not done, the stream waits for them on the device
 * if @device (work of kernels alone) and streams can, else the caller
 * waits (played: its clock does). Lock not held.
 * Return: 0, or the sticky error.
 */
int tp_map_ahead_gate(struct tp_vmm *vmm, struct tp_deferred *d,
		      enum tp_stream s, bool device);

/* The sticky error of a failed map (0: none). Lock not held. */
int tp_map_ahead_error(const struct tp_deferred *d);

/*
 * tp_map_ahead_finish() - at close, the driver thread stopped: drop the
 * maps still queued (after a failure; else none is left) and turn maps
 * ahead off.
 */
void tp_map_ahead_finish(struct tp_vmm *vmm, struct tp_deferred *d);

#endif /* TP_VMM_MAP_AHEAD_H */
