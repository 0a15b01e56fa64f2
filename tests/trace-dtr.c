// SPDX-License-Identifier: MIT
/*
 * The DTR log importer on logs written here: every instruction, views, a
 * mutation of a view's base, multi-output calls, COPY_FROM, the release of
 * an undefined name, warm-up before START. The IR must be exactly the one
 * derived by hand in the comments, and so must the peak and compute time;
 * malformed logs must fail on the right line with the right reason.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "tests/tap.h"

#define N TP_TRACE_NONE
#define C TP_TRACE_COMPUTABLE

static const char *const log_lines[] = {
	/* warm-up, before START: w (100 B) and a temporary t (1000 B) */
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"100\",\"NAME\":\"w\"}",
	"{\"ARGS\":[\"w\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"warm\",\"RESULT\":[\"t\"],\"TIME\":\"5\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"1000\",\"NAME\":\"t\"}",
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"t\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"t\"}",
	/* the measured iteration; 100 B live */
	"{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}",
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"x1\"}",
	"  {\"INSTRUCTION\" : \"CONSTANT\", \"NAME\" : \"x2\"}  ",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"1024\",\"NAME\":\"x2\"}",
	"",
	"{\"ARGS\":[\"x1\",\"x2\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"mm\",\"RESULT\":[\"x3\"],\"TIME\":\"52000\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"x3\"}",
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x3\"}",
	"{\"ARGS\":[\"x3\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"RESULT\":[\"x4\"],\"TIME\":\"900\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8192\",\"NAME\":\"x4\"}",
	"{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x4\"}",
	"{\"ARGS\":[\"x4\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0],\"NAME\":\"relu_\",\"TIME\":\"7000\"}",
	"{\"DST\":\"x5\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"x4\"}",
	/* mutation of the view's base */
	"{\"ARGS\":[\"x3\",\"x2\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0],\"NAME\":\"add_\",\"TIME\":\"3000\"}",
	/* three results: a view of x3 and two fresh ones */
	"{\"ARGS\":[\"x3\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"split\",\"RESULT\":[\"a\",\"b\",\"c\"],\"TIME\":\"600\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4096\",\"NAME\":\"a\"}",
	"{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"2048\",\"NAME\":\"b\"}",
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\"}",
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"2048\",\"NAME\":\"c\"}",
	"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x3\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"never_defined\"}",
	"{\"ANNOTATION\":\"BACKWARD\",\"INSTRUCTION\":\"ANNOTATE\"}",
	"{\"DST\":\"b\",\"INSTRUCTION\":\"COPY_FROM\",\"SRC\":\"c\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"c\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x4\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x5\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}",
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x1\"}",
};
#define N_LINES (sizeof(log_lines) / sizeof(log_lines[0]))

/* size, storage, producer, view_of, flags, final state */
static const struct tp_trace_tensor want_tensors[] = {
	{ 100, 0, N, N, 0, TP_TRACE_LIVE },		/* w */
	{ 1000, 1, 0, N, C, TP_TRACE_FREED },		/* t */
	{ 4096, 2, N, N, 0, TP_TRACE_FREED },		/* x1 */
	{ 1024, 3, N, N, 0, TP_TRACE_LIVE },		/* x2 */
	{ 8192, 4, 1, N, C, TP_TRACE_OVERWRITTEN },	/* x3 by mm */
	{ 8192, 4, 2, 4, C, TP_TRACE_OVERWRITTEN },	/* x4, view of x3 */
	{ 8192, 4, 3, N, C, TP_TRACE_FREED },		/* x4 after relu_ */
	{ 8192, 4, 4, N, C, TP_TRACE_FREED },		/* x3 after add_ */
	{ 4096, 4, 5, 7, C, TP_TRACE_FREED },		/* a */
	{ 2048, 5, 5, N, C, TP_TRACE_OVERWRITTEN },	/* b */
	{ 2048, 6, 5, N, C, TP_TRACE_FREED },		/* c */
	{ 2048, 5, 6, N, C, TP_TRACE_FREED },		/* b after copy_ */
};

static const struct tp_trace_storage want_storages[] = {
	{ 100, 0 }, { 1000, 1 }, { 4096, 2 }, { 1024, 3 }, { 8192, 4 },
	{ 2048, 9 }, { 2048, 10 },
};

static const struct {
	const char *name;
	uint64_t cost;
	unsigned n_args;
	uint32_t args[2];
	unsigned n_outs;
	struct tp_trace_out outs[3];
} want_ops[] = {
	{ "warm", 5, 1, { 0 }, 1, { { 1, TP_TRACE_OUT_FRESH, 0 } } },
	{ "mm", 52000, 2, { 2, 3 }, 1, { { 4, TP_TRACE_OUT_FRESH, 0 } } },
	{ "view", 900, 1, { 4 }, 1, { { 5, TP_TRACE_OUT_VIEW, 0 } } },
	{ "relu_", 7000, 1, { 5 }, 1, { { 6, TP_TRACE_OUT_INPLACE, 0 } } },
	{ "add_", 3000, 2, { 4, 3 }, 1, { { 7, TP_TRACE_OUT_INPLACE, 0 } } },
	{ "split", 600, 1, { 7 }, 3, { { 8, TP_TRACE_OUT_VIEW, 0 },
				       { 9, TP_TRACE_OUT_FRESH, 0 },
				       { 10, TP_TRACE_OUT_FRESH, 0 } } },
	{ "copy_", 0, 2, { 9, 10 }, 1, { { 11, TP_TRACE_OUT_INPLACE, 0 } } },
};

static const struct tp_trace_event want_events[] = {
	{ TP_TRACE_EV_TENSOR, 0 }, { TP_TRACE_EV_OP, 0 },
	{ TP_TRACE_EV_FREE, 1 }, { TP_TRACE_EV_ITER, 0 },
	{ TP_TRACE_EV_MEASURE_BEGIN, 0 }, { TP_TRACE_EV_TENSOR, 2 },
	{ TP_TRACE_EV_TENSOR, 3 }, { TP_TRACE_EV_OP, 1 },
	{ TP_TRACE_EV_OP, 2 }, { TP_TRACE_EV_OP, 3 }, { TP_TRACE_EV_OP, 4 },
	{ TP_TRACE_EV_OP, 5 }, { TP_TRACE_EV_FREE, 7 },
	{ TP_TRACE_EV_BACKWARD, 0 }, { TP_TRACE_EV_OP, 6 },
	{ TP_TRACE_EV_FREE, 10 }, { TP_TRACE_EV_FREE, 6 },
	{ TP_TRACE_EV_FREE, 8 }, { TP_TRACE_EV_FREE, 11 },
	{ TP_TRACE_EV_FREE, 2 },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char *join(const char *const *lines, size_t n, size_t *len)
{
	size_t total = 0, off = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		total += strlen(lines[i]) + 1;
	buf = malloc(total + 1);
	if (!buf)
		bail_out("out of memory");
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);

		memcpy(buf + off, lines[i], l);
		off += l;
		buf[off++] = '\n';
	}
	buf[off] = '\0';
	*len = off;
	return buf;
}

static bool tensors_match(const struct tp_trace *t)
{
	if (t->n_tensors != ARRAY_SIZE(want_tensors))
		return false;
	for (size_t i = 0; i < t->n_tensors; i++) {
		const struct tp_trace_tensor *x = &t->tensors[i];
		const struct tp_trace_tensor *w = &want_tensors[i];

		if (x->size != w->size || x->storage != w->storage ||
		    x->producer != w->producer || x->view_of != w->view_of ||
		    x->flags != w->flags || x->state != w->state) {
			diag("tensor %zu differs", i);
			return false;
		}
	}
	return true;
}

static bool storages_match(const struct tp_trace *t)
{
	if (t->n_storages != ARRAY_SIZE(want_storages))
		return false;
	for (size_t i = 0; i < t->n_storages; i++)
		if (t->storages[i].size != want_storages[i].size ||
		    t->storages[i].base != want_storages[i].base)
			return false;
	return true;
}

static bool ops_match(const struct tp_trace *t)
{
	if (t->n_ops != ARRAY_SIZE(want_ops))
		return false;
	for (size_t i = 0; i < t->n_ops; i++) {
		const struct tp_trace_op *op = &t->ops[i];

		if (strcmp(tp_trace_op_name(t, (uint32_t)i), want_ops[i].name) ||
		    op->cost_ns != want_ops[i].cost ||
		    op->n_args != want_ops[i].n_args ||
		    op->n_outs != want_ops[i].n_outs) {
			diag("op %zu differs", i);
			return false;
		}
		for (unsigned k = 0; k < op->n_args; k++)
			if (t->args[op->first_arg + k] != want_ops[i].args[k])
				return false;
		for (unsigned k = 0; k < op->n_outs; k++) {
			const struct tp_trace_out *o = &t->outs[op->first_out + k];

			if (o->tensor != want_ops[i].outs[k].tensor ||
			    o->kind != want_ops[i].outs[k].kind ||
			    o->alias != want_ops[i].outs[k].alias) {
				diag("op %zu output %u differs", i, k);
				return false;
			}
		}
	}
	return true;
}

static bool events_match(const struct tp_trace *t)
{
	if (t->n_events != ARRAY_SIZE(want_events))
		return false;
	for (size_t i = 0; i < t->n_events; i++)
		if (t->events[i].kind != want_events[i].kind ||
		    t->events[i].arg != want_events[i].arg) {
			diag("event %zu differs", i);
			return false;
		}
	return true;
}

static void test_full_log(void)
{
	struct tp_trace *t = NULL, *t2 = NULL, *t3 = NULL;
	struct tp_trace_summary s;
	struct tp_trace_error err;
	char *buf, *text = NULL;
	size_t len, text_len = 0;
	FILE *f;
	int rc;

	buf = join(log_lines, N_LINES, &len);
	ok(tp_trace_detect(buf, len) == TP_TRACE_FMT_DTR, "detected as DTR");
	rc = tp_trace_parse_dtr(buf, len, "synthetic.log", &t, &err);
	if (!ok_rc(rc, "synthetic log parses"))
		bail_out("%s:%lu: %s", err.file, err.line, err.reason);
	ok(t->records == N_LINES - 1, "records: %llu (blank line skipped)",
	   (unsigned long long)t->records);
	ok(tensors_match(t), "tensors: sizes, storages, producers, views, flags, states");
	ok(storages_match(t), "storages: views and in-place writes add none");
	ok(ops_match(t), "ops: names, costs, inputs, outputs, aliasing");
	ok(events_match(t), "events in program order; undefined release ignored");
	ok(t->releases_ignored == 1, "one release ignored (%llu)",
	   (unsigned long long)t->releases_ignored);
	ok(t->iterations == 1 && t->measured && t->measure_open,
	   "one iteration, measured to the end");

	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	/*
	 * 100 (w) + 4096 (x1) + 1024 (x2) + 8192 (x3 and everything on its
	 * storage) + 2048 (b) + 2048 (c) right after split.
	 */
	ok(s.peak_bytes == 17508, "peak %llu == 17508",
	   (unsigned long long)s.peak_bytes);
	ok(s.peak_event == 11, "peak reached at the split (event %u)",
	   s.peak_event);
	ok(s.compute_ns == 52000 + 900 + 7000 + 3000 + 600 + 0,
	   "compute %llu ns: the region's ops only",
	   (unsigned long long)s.compute_ns);
	ok(s.region_ops == 6, "six ops in the region");
	ok(s.start_bytes == 100 && s.end_bytes == 1124,
	   "live at start %llu (w), at end %llu (w, x2)",
	   (unsigned long long)s.start_bytes, (unsigned long long)s.end_bytes);

	rc = tp_trace_parse_dtr(buf, len, "synthetic.log", &t2, &err);
	ok(!rc && tp_trace_equal(t, t2), "parsing twice gives the same trace");

	/* Through the text format and back: the same program. */
	f = open_memstream(&text, &text_len);
	if (!f)
		bail_out("open_memstream");
	rc = tp_trace_write(t, f);
	fclose(f);
	ok_rc(rc, "written as tpager-trace text");
	rc = tp_trace_parse(text, text_len, "synthetic.trace", &t3, &err);
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	ok(!rc && tp_trace_equal(t, t3), "the text parses back to an equal trace");

	tp_trace_free(t);
	tp_trace_free(t2);
	tp_trace_free(t3);
	free(text);
	free(buf);
}

/* Tensor ids of a multi-output call without START: whole log measured. */
static void test_no_start(void)
{
	static const char *const lines[] = {
		"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"p\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"10\",\"NAME\":\"p\"}",
		"{\"ARGS\":[\"p\",\"p\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"q\",\"r\"],\"TIME\":\"7\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"20\",\"NAME\":\"q\"}",
		"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"q\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"10\",\"NAME\":\"r\"}",
		"{\"ALIAS\":\"1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"r\"}",
		"{\"ARGS\":[\"q\",\"r\",\"p\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[1,0,1,2],\"NAME\":\"swap_\",\"TIME\":\"3\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"p\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"q\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"r\"}",
	};
	struct tp_trace *t = NULL;
	struct tp_trace_summary s;
	struct tp_trace_error err;
	const struct tp_trace_op *op;
	size_t len;
	char *buf = join(lines, ARRAY_SIZE(lines), &len);
	int rc;

	rc = tp_trace_parse_dtr(buf, len, "nostart.log", &t, &err);
	if (!ok_rc(rc, "log without START parses"))
		bail_out("%s:%lu: %s", err.file, err.line, err.reason);
	ok(!t->measured && t->iterations == 0, "no region, no iteration");
	op = &t->ops[1];
	ok(t->n_ops == 2 && op->n_outs == 3 && op->n_args == 3 &&
	   t->outs[op->first_out].alias == 1 &&
	   t->outs[op->first_out + 1].alias == 0 &&
	   t->outs[op->first_out + 2].alias == 2 &&
	   t->tensors[t->outs[op->first_out].tensor].storage == 0 &&
	   t->tensors[t->outs[op->first_out + 1].tensor].storage == 1 &&
	   t->tensors[t->outs[op->first_out + 2].tensor].storage == 0,
	   "a repeated MUTATE index writes once; outputs take their storages");
	ok(t->tensors[t->outs[op->first_out].tensor].flags == C &&
	   t->tensors[t->outs[op->first_out + 1].tensor].flags == C &&
	   t->tensors[t->outs[op->first_out + 2].tensor].flags == 0,
	   "an overwritten constant stays uncomputable, results stay computable");
	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	ok(s.peak_bytes == 30 && s.compute_ns == 10 && s.end_bytes == 0,
	   "whole log measured: peak %llu == 30, compute %llu == 10, end 0",
	   (unsigned long long)s.peak_bytes, (unsigned long long)s.compute_ns);
	tp_trace_free(t);
	free(buf);
}

static const struct {
	const char *text;
	unsigned long line;
	const char *reason;
} bad[] = {
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"",
	  1, "bad JSON: truncated object" },
	{ "{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
	  "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":x1}",
	  2, "bad JSON: values must be strings or arrays" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x1\",}",
	  1, "bad JSON: expected a string key" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x1\"} x",
	  1, "bad JSON: text after the object" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"INSTRUCTION\":\"RELEASE\"}",
	  1, "bad JSON: duplicate key" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\\qb\"}",
	  1, "bad JSON: bad escape in string" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":[[\"a\"]]}",
	  1, "bad JSON: nested arrays and objects are not allowed" },
	{ "[\"INSTRUCTION\"]", 1, "bad JSON: expected a JSON object" },
	{ "{\"NAME\":\"x\"}", 1, "record: missing field INSTRUCTION" },
	{ "{\"INSTRUCTION\":\"FROB\",\"NAME\":\"x\"}",
	  1, "unknown instruction 'FROB'" },
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	  "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x1\"}",
	  2, "CONSTANT x1 on line 1 is not followed by its MEMORY line" },
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n",
	  1, "truncated log: CONSTANT x1 on line 1 has no MEMORY line" },
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"12a\",\"NAME\":\"x1\"}",
	  2, "MEMORY: bad number in MEMORY: '12a'" },
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"18446744073709551616\",\"NAME\":\"x1\"}",
	  2, "MEMORY: number in MEMORY out of range: '18446744073709551616'" },
	{ "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"x2\"}",
	  2, "MEMORY: names x2, but the CONSTANT on line 1 is x1" },
	{ "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"x2\"}",
	  1, "MEMORY line without a CONSTANT or CALL before it" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"-5\"}",
	  1, "CALL: bad number in TIME: '-5'" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"]}",
	  1, "CALL: missing field TIME" },
	{ "{\"ARGS\":[\"nope\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}",
	  1, "CALL: nope is not defined" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}\n",
	  2, "truncated log: the CALL on line 1 lacks the ALIAS line of result y" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}",
	  2, "CALL on line 1: expected the MEMORY line of result y" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}\n"
	  "{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}",
	  3, "ALIAS: argument 0 out of range (the CALL has 0)" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}\n"
	  "{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}\n"
	  "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"y\"}\n"
	  "{\"ARGS\":[\"y\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[0],\"NAME\":\"g_\",\"TIME\":\"1\"}",
	  5, "MUTATE: y is used after its last release" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}\n"
	  "{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}\n"
	  "{\"ARGS\":[\"y\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[1],\"NAME\":\"g_\",\"TIME\":\"1\"}",
	  4, "MUTATE: index 1 out of range (1 arguments)" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}\n"
	  "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}\n"
	  "{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}\n"
	  "{\"DST\":\"y\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"y\"}",
	  4, "COPY: y is already defined" },
	{ "{\"ANNOTATION\":\"MIDDLE\",\"INSTRUCTION\":\"ANNOTATE\"}",
	  1, "ANNOTATE: unknown annotation 'MIDDLE'" },
	{ "{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"two words\",\"RESULT\":[],\"TIME\":\"1\"}",
	  1, "CALL: op name 'two words' is not one token of 1 to 255 bytes" },
	{ "\n\n", 0, "empty log" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"\\ud800\"}",
	  1, "bad JSON: lone high surrogate in \\u escape" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"\\udc00\"}",
	  1, "bad JSON: lone low surrogate in \\u escape" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"\\u00g0\"}",
	  1, "bad JSON: bad hex digit in \\u escape" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\tb\"}",
	  1, "bad JSON: control character in string" },
	{ "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"f_\",\"ARGS\":[],\"MUTATE\":[01],\"TIME\":\"1\"}",
	  1, "bad JSON: expected ',' or ']' in array" },
	{ "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"f_\",\"ARGS\":[],\"MUTATE\":[1.5],\"TIME\":\"1\"}",
	  1, "MUTATE: bad number in MUTATE: '1.5'" },
	{ "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"f_\",\"ARGS\":[],\"MUTATE\":[1e],\"TIME\":\"1\"}",
	  1, "bad JSON: bad number: no digit in exponent" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}{}",
	  1, "bad JSON: text after the object" },
	{ "{\"INSTRUCTION\":\"RELEASE\" \"NAME\":\"a\"}",
	  1, "bad JSON: expected ',' or '}' in object" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a}",
	  1, "bad JSON: unterminated string" },
	{ "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":true}",
	  1, "bad JSON: values must be strings or arrays" },
	{ "{\"INSTRUCTION\":[\"RELEASE\"],\"NAME\":\"a\"}",
	  1, "record: field INSTRUCTION must be a string" },
};

static void test_malformed(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tp_trace *t = (struct tp_trace *)&t;
		struct tp_trace_error err;
		int rc;

		memset(&err, 0, sizeof(err));
		rc = tp_trace_parse_dtr(bad[i].text, strlen(bad[i].text),
					"bad.log", &t, &err);
		ok(rc == -EINVAL && err.line == bad[i].line &&
		   !strcmp(err.reason, bad[i].reason) &&
		   !strcmp(err.file, "bad.log") &&
		   t == (struct tp_trace *)&t,
		   "bad log %zu: line %lu, \"%s\"", i, bad[i].line,
		   bad[i].reason);
		if (rc != -EINVAL || err.line != bad[i].line ||
		    strcmp(err.reason, bad[i].reason))
			diag("got %d, line %lu, \"%s\"", rc, err.line,
			     err.reason);
	}
}

/* Escapes decode before names are compared. */
static void test_escapes(void)
{
	static const char *const lines[] = {
		"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"\\u0078\\/1\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"x/1\"}",
		"{\"ARGS\":[\"x\\u002f1\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\\u00e9\\ud83d\\ude00\",\"RESULT\":[\"\\\"q\\n\"],\"TIME\":\"2\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"16\",\"NAME\":\"\\\"q\\u000a\"}",
		"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"\\u0022q\\n\"}",
	};
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	size_t len;
	char *buf = join(lines, ARRAY_SIZE(lines), &len);
	int rc;

	rc = tp_trace_parse_dtr(buf, len, "escapes.log", &t, &err);
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	ok(!rc && t->n_ops == 1 && t->n_tensors == 2 &&
	   t->tensors[1].size == 16,
	   "names match after decoding \\uXXXX, \\/, \\\" and \\n");
	ok(!rc && !strcmp(tp_trace_op_name(t, 0), "f\xc3\xa9\xf0\x9f\x98\x80"),
	   "op name decoded to UTF-8, surrogate pair included");
	tp_trace_free(t);
	free(buf);
}

/* A name released once more than it was referenced: ignored, counted. */
static void test_release_twice(void)
{
	static const char *const lines[] = {
		"{\"ARGS\":[],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"TIME\":\"1\"}",
		"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"8\",\"NAME\":\"y\"}",
		"{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"y\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"y\"}",
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"z\"}",
	};
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	size_t len, frees = 0;
	char *buf = join(lines, ARRAY_SIZE(lines), &len);
	int rc;

	rc = tp_trace_parse_dtr(buf, len, "twice.log", &t, &err);
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	for (size_t i = 0; !rc && i < t->n_events; i++)
		frees += t->events[i].kind == TP_TRACE_EV_FREE;
	ok(!rc && t->n_ops == 1 && frees == 1,
	   "a second release of a name parses; the tensor is freed once (%zu)",
	   frees);
	ok(!rc && t->releases_ignored == 2,
	   "the second release and the undefined one are counted (%llu)",
	   rc ? 0ULL : (unsigned long long)t->releases_ignored);
	tp_trace_free(t);
	free(buf);
}

int main(void)
{
	plan_tests(18 + 6 + 2 + 2 + ARRAY_SIZE(bad));
	test_escapes();
	test_full_log();
	test_no_start();
	test_malformed();
	test_release_twice();
	return exit_status();
}
