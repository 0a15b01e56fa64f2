/* SPDX-License-Identifier: MIT */
/*
 * The trace's records and how they are written: Chrome trace JSON, one
 * event per record, times in microseconds from the trace's epoch.
 */
#ifndef TP_TRACER_TRACER_JSON_H
#define TP_TRACER_TRACER_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "vmm/vmm.h"

#define TRACE_NAME	64u
#define TRACE_PID	1

struct trace_rec {
	char ph;			/* 'X', 'C', 'i' */
	enum tp_stream s;
	const char *cat;
	char name[TRACE_NAME];
	uint64_t ts, dur;		/* ns on the backend clock */
	uint64_t tensor, bytes;		/* X, i */
	uint64_t dev, host;		/* C */
	struct tp_op_work work;		/* X of an op, when has_work */
	bool has_work;
	int tid;			/* a host track; 0: stream s's */
	uint64_t units;			/* driver calls: chunks */
};

/*
 * Open the JSON object and its traceEvents array: the process, named for
 * the @backend, and @n tracks named @track[0..n), tids 1..n.
 */
void tp_tracer_json_begin(FILE *f, const char *backend,
			  const char *const *track, unsigned n);

/* Write @r as the next event, @t0 the epoch on the backend's clock. */
void tp_tracer_rec_write(FILE *f, uint64_t t0, const struct trace_rec *r);

#endif /* TP_TRACER_TRACER_JSON_H */
