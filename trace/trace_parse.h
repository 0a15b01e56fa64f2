/* SPDX-License-Identifier: MIT */
/* What the trace parsers share: the format version and error filling. */
#ifndef TP_TRACE_TRACE_PARSE_H
#define TP_TRACE_TRACE_PARSE_H

#include <stdarg.h>

#include "trace/trace.h"

/*
 * The versions of tpager-trace(5) this code reads. The writer gives
 * version 3, so that every trace it writes says where it ends, or 4 where
 * a split mark says how its parts read; the older ones read as they
 * always did.
 */
#define TP_TRACE_TEXT_V1	1
#define TP_TRACE_TEXT_V2	2	/* adds split= to op records */
#define TP_TRACE_TEXT_V3	3	/* adds the end record, required */
#define TP_TRACE_TEXT_V4	4	/* adds split='s KIND field */
#define TP_TRACE_TEXT_LAST	TP_TRACE_TEXT_V4

/**
 * tp_trace_verror() - fill @err (may be NULL) with @file, @line and the
 * formatted reason. The file name is truncated to fit, the reason too.
 */
void tp_trace_verror(struct tp_trace_error *err, const char *file,
		     unsigned long line, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/** tp_trace_set_error() - tp_trace_verror() with a plain reason. */
void tp_trace_set_error(struct tp_trace_error *err, const char *file,
			unsigned long line, const char *reason);

#endif /* TP_TRACE_TRACE_PARSE_H */
