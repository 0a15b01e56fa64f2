/* SPDX-License-Identifier: MIT */
/* Invariants both trace harnesses check on what a parser returns. */
#ifndef TP_TESTS_FUZZ_TRACE_FUZZ_CHECK_H
#define TP_TESTS_FUZZ_TRACE_FUZZ_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

#define FUZZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: invariant broken: %s\n",	\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

/* Lines in @data as the parsers count them. */
static inline unsigned long fuzz_lines(const uint8_t *data, size_t size)
{
	unsigned long n = 0;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n + (size && data[size - 1] != '\n');
}

/*
 * A parse result: an error names a line of the input and has a reason;
 * an accepted trace is consistent, writes as text that parses back to an
 * equal trace, and can be accounted.
 */
static inline int fuzz_check_result(int rc, struct tp_trace *t,
				    const struct tp_trace_error *err,
				    const uint8_t *data, size_t size)
{
	struct tp_trace_summary s;
	struct tp_trace_error err2;
	struct tp_trace *t2 = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_CHECK(err->line <= fuzz_lines(data, size));
		FUZZ_CHECK(err->reason[0] != '\0');
		FUZZ_CHECK(memchr(err->reason, '\0', sizeof(err->reason)));
		return 0;
	}
	for (size_t i = 0; i < t->n_tensors; i++) {
		FUZZ_CHECK(t->tensors[i].storage < t->n_storages);
		FUZZ_CHECK(t->tensors[i].producer == TP_TRACE_NONE ||
			   t->tensors[i].producer < t->n_ops);
	}
	for (size_t i = 0; i < t->n_ops; i++) {
		const struct tp_trace_op *op = &t->ops[i];

		FUZZ_CHECK(op->first_arg + op->n_args <= t->n_args);
		FUZZ_CHECK(op->first_out + op->n_outs <= t->n_outs);
	}
	FUZZ_CHECK(!tp_trace_peak(t, &s));
	FUZZ_CHECK(s.peak_bytes >= s.start_bytes);
	FUZZ_CHECK(s.peak_bytes >= s.end_bytes || t->measure_open ||
		   !t->measured);

	f = open_memstream(&text, &len);
	FUZZ_CHECK(f);
	FUZZ_CHECK(!tp_trace_write(t, f));
	fclose(f);
	rc = tp_trace_parse(text, len, "rewritten", &t2, &err2);
	if (rc)
		fprintf(stderr, "rewritten:%lu: %s\n", err2.line, err2.reason);
	FUZZ_CHECK(!rc);
	FUZZ_CHECK(tp_trace_equal(t, t2));
	tp_trace_free(t2);
	free(text);
	return 1;
}

/* A trace parser's signature (tp_trace_parse, tp_trace_parse_dtr). */
typedef int (*fuzz_parser)(const char *buf, size_t len, const char *file,
			   struct tp_trace **out, struct tp_trace_error *err);

/* Parse @data with @parse and check the result (fuzz_check_result). */
static inline int fuzz_parse(fuzz_parser parse, const uint8_t *data,
			     size_t size)
{
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = parse((const char *)data, size, "fuzz", &t, &err);
	rc = fuzz_check_result(rc, t, &err, data, size);
	tp_trace_free(t);
	return rc;
}

#endif /* TP_TESTS_FUZZ_TRACE_FUZZ_CHECK_H */
