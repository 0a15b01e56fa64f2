// SPDX-License-Identifier: MIT
/*
 * Loading trace files: the format is detected from the first line, can be
 * forced, and a file that is neither format, missing or unreadable is an
 * error that names it. Also the operand limits of both parsers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace.h"
#include "tests/tap.h"

static char dir[] = "/tmp/tp-trace-load-XXXXXX";

static const char *put(const char *name, const char *text, size_t len)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(text, 1, len, f) != len || fclose(f))
		bail_out("cannot write %s", path);
	return path;
}

static void test_detect(void)
{
	ok(tp_trace_detect("tpager-trace 1\n", 15) == TP_TRACE_FMT_TEXT &&
	   tp_trace_detect("  tpager-trace\t1", 16) == TP_TRACE_FMT_TEXT &&
	   tp_trace_detect("tpager-trace", 12) == TP_TRACE_FMT_TEXT,
	   "tpager-trace header detected");
	ok(tp_trace_detect("{\"INSTRUCTION\"", 14) == TP_TRACE_FMT_DTR &&
	   tp_trace_detect(" \t{", 3) == TP_TRACE_FMT_DTR,
	   "a JSON object detected as DTR");
	ok(tp_trace_detect("tpager-traces 1", 15) == TP_TRACE_FMT_UNKNOWN &&
	   tp_trace_detect("", 0) == TP_TRACE_FMT_UNKNOWN &&
	   tp_trace_detect("\n{", 2) == TP_TRACE_FMT_UNKNOWN &&
	   tp_trace_detect("# x\n", 4) == TP_TRACE_FMT_UNKNOWN,
	   "anything else is unknown");
}

static void test_load(void)
{
	static const char text[] = "tpager-trace 1\ntensor 0 64 input\nfree 0\n";
	static const char dtr[] =
		"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"64\",\"NAME\":\"x1\"}\n";
	enum tp_trace_format fmt;
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	const char *p;
	int rc;

	p = put("a.trace", text, sizeof(text) - 1);
	fmt = TP_TRACE_FMT_UNKNOWN;
	rc = tp_trace_load(p, &fmt, &t, &err);
	ok(!rc && t->n_tensors == 1 && t->n_events == 2 &&
	   fmt == TP_TRACE_FMT_TEXT, "text file loaded");
	tp_trace_free(t);
	t = NULL;
	fmt = TP_TRACE_FMT_DTR;
	rc = tp_trace_load(p, &fmt, &t, &err);
	ok(rc == -EINVAL && err.line == 1 && !strcmp(err.file, p) &&
	   !strcmp(err.reason, "bad JSON: expected a JSON object") && !t,
	   "forced DTR on a text file: %s", err.reason);

	p = put("b.log", dtr, sizeof(dtr) - 1);
	fmt = TP_TRACE_FMT_UNKNOWN;
	rc = tp_trace_load(p, &fmt, &t, &err);
	ok(!rc && t->n_tensors == 1 && t->tensors[0].size == 64 &&
	   fmt == TP_TRACE_FMT_DTR, "DTR log loaded");
	tp_trace_free(t);
	t = NULL;

	p = put("c.txt", "hello\n", 6);
	fmt = TP_TRACE_FMT_UNKNOWN;
	rc = tp_trace_load(p, &fmt, &t, &err);
	ok(rc == -EINVAL && err.line == 1 && !strcmp(err.file, p) && !t,
	   "unknown format: %s", err.reason);

	p = put("d.trace", "", 0);
	fmt = TP_TRACE_FMT_TEXT;
	rc = tp_trace_load(p, &fmt, &t, &err);
	ok(rc == -EINVAL && err.line == 0 && !t, "empty file: %s", err.reason);

	snprintf(err.file, sizeof(err.file), "unset");
	fmt = TP_TRACE_FMT_UNKNOWN;
	rc = tp_trace_load("/nonexistent/x.trace", &fmt, &t, &err);
	ok(rc == -ENOENT && !strcmp(err.file, "/nonexistent/x.trace") && !t,
	   "missing file: -ENOENT, named");
	fmt = TP_TRACE_FMT_UNKNOWN;
	rc = tp_trace_load(dir, &fmt, &t, &err);
	ok(rc == -EISDIR && !t, "a directory: -EISDIR");
}

/* 255 operands are fine, 256 are an error, in both formats. */
static void test_limits(void)
{
	size_t cap = 64 * 1024, n;
	char *buf = malloc(cap);
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	int rc;

	if (!buf)
		bail_out("out of memory");
	for (int extra = 0; extra < 2; extra++) {
		n = (size_t)snprintf(buf, cap, "tpager-trace 1\ntensor 0 8 input\nop f 1");
		for (int i = 0; i < 255 + extra; i++)
			n += (size_t)snprintf(buf + n, cap - n, " 0");
		n += (size_t)snprintf(buf + n, cap - n, " =>\n");
		rc = tp_trace_parse(buf, n, "limits", &t, &err);
		if (!extra)
			ok(!rc && t->ops[0].n_args == 255, "255 inputs");
		else
			ok(rc == -EINVAL && err.line == 3 &&
			   !strcmp(err.reason, "op: more than 255 inputs"),
			   "256 inputs: %s", err.reason);
		tp_trace_free(t);
		t = NULL;
	}
	for (int extra = 0; extra < 2; extra++) {
		n = (size_t)snprintf(buf, cap,
				     "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"}\n"
				     "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"x\"}\n"
				     "{\"ARGS\":[\"x\"");
		for (int i = 1; i < 255 + extra; i++)
			n += (size_t)snprintf(buf + n, cap - n, ",\"x\"");
		n += (size_t)snprintf(buf + n, cap - n,
				      "],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[],\"TIME\":\"1\"}\n");
		rc = tp_trace_parse_dtr(buf, n, "limits", &t, &err);
		if (!extra)
			ok(!rc && t->ops[0].n_args == 255, "DTR: 255 arguments");
		else
			ok(rc == -EINVAL && err.line == 3 &&
			   !strcmp(err.reason, "CALL: more than 255 arguments"),
			   "DTR: 256 arguments: %s", err.reason);
		tp_trace_free(t);
		t = NULL;
	}
	free(buf);
}

int main(void)
{
	char path[256];

	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	plan_tests(3 + 7 + 4);
	test_detect();
	test_load();
	test_limits();
	for (const char *const *f = (const char *const[]){ "a.trace", "b.log",
		"c.txt", "d.trace", NULL }; *f; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		unlink(path);
	}
	rmdir(dir);
	return exit_status();
}
