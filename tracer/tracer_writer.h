/* SPDX-License-Identifier: MIT */
/*
 * The trace's writer: a thread of its own formats and writes the records
 * the caller's thread has filled, a buffer at a time, so that writing a
 * trace does not stop the thread that issues the work it traces (a
 * buffer of 4096 records took that thread 5-7 ms, in which a GPU idled).
 */
#ifndef TP_TRACER_TRACER_WRITER_H
#define TP_TRACER_TRACER_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "tracer/tracer_json.h"

struct tp_tracer_writer {
	FILE *f;
	uint64_t t0;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct trace_rec *full;		/* handed over, not yet written */
	unsigned nr_full;
	struct trace_rec *spare;	/* written: the caller's next */
	bool stop;
	bool failed;			/* a write failed (sticky) */
};

/*
 * tp_tracer_writer_start() - write records to @f (times from @t0) on a
 * thread of its own, with a spare buffer of @cap records.
 * Return: 0 or -errno (nothing started).
 */
int tp_tracer_writer_start(struct tp_tracer_writer *w, FILE *f, uint64_t t0,
			   unsigned cap);

/*
 * tp_tracer_writer_swap() - hand over the @n records of @buf, once the
 * buffer handed over before is written; return the buffer to fill next.
 */
struct trace_rec *tp_tracer_writer_swap(struct tp_tracer_writer *w,
					struct trace_rec *buf, unsigned n);

/* tp_tracer_writer_failed() - whether a write failed so far. */
bool tp_tracer_writer_failed(struct tp_tracer_writer *w);

/*
 * tp_tracer_writer_stop() - wait for what was handed over to be written,
 * end the thread and free the spare buffer. The file is the caller's
 * again.
 */
void tp_tracer_writer_stop(struct tp_tracer_writer *w);

#endif /* TP_TRACER_TRACER_WRITER_H */
