/* SPDX-License-Identifier: MIT */
/*
 * stats.trace: a Chrome/Perfetto JSON trace of the three streams (ops on
 * compute, offloads on d2h, reloads and prefetches on h2d), evictions,
 * the host's driver calls (by kind, with the chunks they covered) and its
 * waits on the device, and a counter of device and host swap bytes in
 * use: an idle compute track beside a busy driver track is time lost to
 * the driver.
 *
 * Spans are timed by the backend: a timed event recorded on the stream
 * after the work, read once it has completed, against an epoch event
 * recorded when the trace opened (device time on cuda, the time the
 * host's streams reached the events on host, the virtual clocks on sim).
 * Nothing here synchronises a stream except tp_tracer_close().
 *
 * Every function accepts a NULL tracer and does nothing then, so callers
 * need not check whether tracing is on. Caller's thread only.
 */
#ifndef TP_TRACER_TRACER_H
#define TP_TRACER_TRACER_H

#include <stdbool.h>
#include <stdint.h>

#include "tpager.h"
#include "vmm/vmm.h"

struct tp_tracer;

/**
 * tp_tracer_open() - start a trace into @path.
 * @vmm: the open backend whose streams and clocks are traced.
 * @path: the file, created or truncated.
 *
 * Return: the tracer, or NULL with errno set (the file cannot be opened,
 * or an event cannot be created); the reason is logged.
 */
struct tp_tracer *tp_tracer_open(struct tp_vmm *vmm, const char *path);

/**
 * tp_tracer_close() - wait for the spans still in flight, write them and
 * the end of the file, close it. Before the vmm closes.
 *
 * Return: 0, or -errno of the first write error (also logged).
 */
int tp_tracer_close(struct tp_tracer *tr);

/**
 * tp_tracer_issue() - the issuing thread spent [@t0, @t1) (backend clock)
 * in tp_op_run() of op type @name, its own work and its waits together:
 * a span on the "ops issued" track when it took 100 us or more (where
 * the host keeps a GPU idle without waiting for anything, it shows).
 */
void tp_tracer_issue(struct tp_tracer *tr, const char *name, uint64_t t0,
		     uint64_t t1);

/**
 * tp_tracer_op_begin() - an op is about to be launched on the compute
 * stream: record where it starts.
 *
 * Return: 0, a handle for tp_tracer_op_end(), or -1 when none (no
 * tracer, or an event could not be recorded: the op goes untraced).
 * Nothing else may be traced before the matching tp_tracer_op_end().
 */
int tp_tracer_op_begin(struct tp_tracer *tr);

/**
 * tp_tracer_op_end() - the op of span @span was launched (@ok) or failed.
 * @name: the op type's name; @recompute: a replay, named "NAME
 * (recompute)" in category "recompute" instead of "op".
 * @work: what the op did (its args "flops" and "bytes"), or NULL.
 */
void tp_tracer_op_end(struct tp_tracer *tr, int span, const char *name,
		      bool recompute, bool ok, const struct tp_op_work *work);

/**
 * tp_tracer_copy() - copies of @bytes for tensor @tensor were just
 * enqueued on @s (d2h: "offload"; h2d: "reload" or @prefetch
 * "prefetch"), issued at @issue_ns on the backend's clock.
 * @host_bytes: host swap bytes in use now (for the counter).
 */
void tp_tracer_copy(struct tp_tracer *tr, enum tp_stream s, bool prefetch,
		    uint64_t tensor, uint64_t bytes, uint64_t issue_ns,
		    uint64_t host_bytes);

/**
 * tp_tracer_evict() - @bytes of tensor @tensor were evicted now.
 * @host_bytes: host swap bytes in use now (for the counter).
 */
void tp_tracer_evict(struct tp_tracer *tr, uint64_t tensor, uint64_t bytes,
		     uint64_t host_bytes);

#endif /* TP_TRACER_TRACER_H */
