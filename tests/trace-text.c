// SPDX-License-Identifier: MIT
/*
 * tpager-trace(5): a hand-written trace parses to the IR its comments
 * describe; writer and parser round-trip (same trace, same bytes); every
 * kind of malformed input fails on its line with its reason and leaves the
 * output pointer alone; the builder refuses bad records and stays
 * unchanged. The same for split marks (version 2). From version 3 a
 * trace closes with its end record, and a cut anywhere is an error.
 *
 * One file, past the usual length: one point per rule of the format,
 * each a few lines over the same parse helpers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "tests/tap.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char sample[] =
	"tpager-trace 1\n"
	"# a comment line\n"
	"\n"
	"iter 0\n"
	"tensor 10 4096 input\n"			/* t0, st0 */
	"tensor 11 1024 param	# trailing comment\n"	/* t1, st1 */
	"tensor 12 512 param view=11\n"			/* t2, st1 */
	"measure begin\n"
	"op mm 52000 10 11 => 13:8192:activation,computable\n"	/* op0 t3 st2 */
	"op view 900 13 => 14:8192:activation,computable:view=0\n" /* op1 t4 st2 */
	"op relu_ 7000 14 => 15:8192:activation,computable:inplace=0\n" /* op2 t5 st2 */
	"free 10\n"
	"backward\n"
	"op loss 10 15 13 => 16:4:grad,computable 17:100:computable\n" /* op3 t6 st3, t7 st4 */
	"op sgd_ 30 11 16 => 18:1024:param:inplace=0\n"	/* op4 t8 st1 */
	"free 15\n"
	"free 13\n"
	"measure end\n"
	"iter 1\n"
	"op noop 1 =>\n"					/* op5 */
	"  free   17  \r\n";

static void test_sample(void)
{
	struct tp_trace *t = NULL, *t2 = NULL;
	struct tp_trace_summary s;
	struct tp_trace_error err;
	char *text = NULL, *text2 = NULL;
	size_t len = 0, len2 = 0;
	FILE *f;
	int rc;

	ok(tp_trace_detect(sample, sizeof(sample) - 1) == TP_TRACE_FMT_TEXT,
	   "detected as tpager-trace");
	rc = tp_trace_parse(sample, sizeof(sample) - 1, "sample.trace", &t, &err);
	if (!ok_rc(rc, "sample parses"))
		bail_out("%s:%lu: %s", err.file, err.line, err.reason);
	ok(t->n_tensors == 9 && t->n_storages == 5 && t->n_ops == 6 &&
	   t->n_events == 18 && t->records == 18,
	   "9 tensors, 5 storages, 6 ops, 18 events, 18 records");
	ok(t->tensors[2].storage == 1 && t->tensors[2].view_of == 1 &&
	   t->tensors[2].flags == TP_TRACE_PARAM,
	   "tensor view= shares its base's storage");
	ok(t->tensors[4].storage == 2 && t->tensors[4].view_of == 3 &&
	   t->tensors[5].storage == 2 && t->tensors[5].producer == 2 &&
	   t->tensors[4].state == TP_TRACE_OVERWRITTEN,
	   "view and in-place outputs share storage; in-place ends the input");
	ok(t->tensors[8].storage == 1 && t->tensors[1].state == TP_TRACE_OVERWRITTEN &&
	   t->tensors[8].flags == TP_TRACE_PARAM,
	   "the parameter update overwrote the parameter in place");
	ok(t->ops[3].n_args == 2 && t->args[t->ops[3].first_arg] == 5 &&
	   t->args[t->ops[3].first_arg + 1] == 3 && t->ops[3].n_outs == 2 &&
	   t->tensors[6].flags == (TP_TRACE_GRAD | TP_TRACE_COMPUTABLE) &&
	   t->tensors[7].flags == TP_TRACE_COMPUTABLE &&
	   t->ops[5].n_args == 0 && t->ops[5].n_outs == 0,
	   "operands and flags as written; an op may have none");
	ok(!strcmp(tp_trace_op_name(t, 4), "sgd_") && t->ops[0].cost_ns == 52000,
	   "names and costs");
	ok(t->iterations == 2 && t->measured && !t->measure_open,
	   "two iterations, one closed measured region");

	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	/* 4096 + 1024 + 8192 at op0; then -4096 (free 10); +4 +100 at op3. */
	ok(s.peak_bytes == 13312 && s.start_bytes == 5120 &&
	   s.end_bytes == 1024 + 4 + 100,
	   "peak %llu == 13312, start %llu == 5120, end %llu == 1128",
	   (unsigned long long)s.peak_bytes, (unsigned long long)s.start_bytes,
	   (unsigned long long)s.end_bytes);
	ok(s.compute_ns == 52000 + 900 + 7000 + 10 + 30 && s.region_ops == 5,
	   "compute %llu: the op after 'measure end' is not counted",
	   (unsigned long long)s.compute_ns);

	f = open_memstream(&text, &len);
	rc = tp_trace_write(t, f);
	fclose(f);
	ok_rc(rc, "written");
	rc = tp_trace_parse(text, len, "out.trace", &t2, &err);
	ok(!rc && tp_trace_equal(t, t2), "written text parses to an equal trace");
	f = open_memstream(&text2, &len2);
	rc = tp_trace_write(t2, f);
	fclose(f);
	ok(!rc && len == len2 && !memcmp(text, text2, len),
	   "and writes the same bytes again");
	ok(!strncmp(text, "tpager-trace 3\n", 15) && len >= 4 &&
	   !strcmp(text + len - 4, "end\n"),
	   "written as version 3, closing with its end record");
	ok(strstr(text, "op relu_ 7000 4 => 5:8192:activation,computable:inplace=0\n") &&
	   strstr(text, "tensor 2 512 param view=1\n") &&
	   strstr(text, "op noop 1 =>\n"),
	   "records written as tpager-trace(5) describes");
	tp_trace_free(t);
	tp_trace_free(t2);
	free(text);
	free(text2);
}

static const struct {
	const char *text;
	unsigned long line;
	const char *reason;
} bad[] = {
	{ "", 0, "empty file: no 'tpager-trace VERSION' header" },
	{ "tensor 1 8 input\n", 1,
	  "not a tpager-trace file: the first line must be 'tpager-trace VERSION'" },
	{ "tpager-trace 5\n", 1, "unsupported version 5 (this reader knows 1 to 4)" },
	{ "tpager-trace 0\n", 1, "unsupported version 0 (this reader knows 1 to 4)" },
	{ "tpager-trace\n", 1, "header: expected 'tpager-trace VERSION'" },
	{ "tpager-trace 1\nfrob 1\n", 2, "unknown record 'frob'" },
	{ "tpager-trace 1\ntensor 1 8\n", 2,
	  "tensor: expected 'tensor ID SIZE FLAGS [view=ID]'" },
	{ "tpager-trace 1\ntensor 1 12x input\n", 2,
	  "bad size '12x': not a decimal number" },
	{ "tpager-trace 1\ntensor 1 18446744073709551616 input\n", 2,
	  "size '18446744073709551616' out of range" },
	{ "tpager-trace 1\ntensor 1 8 inputs\n", 2, "unknown flag 'inputs'" },
	{ "tpager-trace 1\ntensor 1 8 input,,param\n", 2, "unknown flag ''" },
	{ "tpager-trace 1\ntensor 1 8 input,input\n", 2,
	  "flag 'input' given twice" },
	{ "tpager-trace 1\ntensor 1 8 input\ntensor 1 8 input\n", 3,
	  "tensor 1 is already defined" },
	{ "tpager-trace 1\ntensor 1 8 input view=2\n", 2,
	  "tensor 2 is not defined" },
	{ "tpager-trace 1\ntensor 1 8 input\ntensor 2 8 input see=1\n", 3,
	  "tensor: expected view=ID, not 'see=1'" },
	{ "tpager-trace 1\ntensor 1 8 input\nfree 1\nfree 1\n", 4,
	  "tensor 1 was freed" },
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 1 => 2:8:-:inplace=0\nop g 1 1 => 3:8:-\n",
	  4, "tensor 1 was overwritten in place" },
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 1 2:8:-\n", 3,
	  "op: missing '=>'" },
	{ "tpager-trace 1\nop f x => 2:8:-\n", 2,
	  "bad cost 'x': not a decimal number" },
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 1 => 2:8:-:view=1\n", 3,
	  "output: input index 1 out of range (op has 1 inputs)" },
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 1 => 2:8:-:alias=0\n", 3,
	  "output: expected view=K or inplace=K, not 'alias=0'" },
	{ "tpager-trace 1\nop f 1 => 2:8\n", 2,
	  "output: expected ID:SIZE:FLAGS[:view=K|:inplace=K]" },
	{ "tpager-trace 1\nop f 1 => 2:8:-:view=0:x\n", 2,
	  "output: too many ':' fields" },
	{ "tpager-trace 1\nop f 1 => 2:8:- 2:8:-\n", 2,
	  "op: output 2 given twice" },
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 1 1 => 2:8:-:inplace=0 3:8:-:inplace=1\n",
	  3, "op: one input overwritten twice" },
	{ "tpager-trace 1\niter 1\n", 2, "iter: expected iteration 0, not 1" },
	{ "tpager-trace 1\nmeasure end\n", 2,
	  "measure end: no measured region is open" },
	{ "tpager-trace 1\nmeasure begin\nmeasure end\nmeasure begin\n", 4,
	  "measure begin: a measured region was already opened" },
	{ "tpager-trace 1\nmeasure middle\n", 2,
	  "measure: expected 'begin' or 'end'" },
	{ "tpager-trace 1\nbackward now\n", 2, "backward: takes no fields" },
	{ "tpager-trace 1\nfree\n", 2, "free: expected 'free ID'" },
	{ "tpager-trace 1\nfree 1\x01\n", 2, "control character 0x01" },
	{ "tpager-trace 1\n# ok\nfree 1\0\n", 3, "NUL byte in line" },
	/* split marks */
	{ "tpager-trace 1\ntensor 1 8 input\nop f 1 split=2:0:- 1 =>\n", 3,
	  "op: split= needs 'tpager-trace 2' (the header says 1)" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=x:0:- 1 =>\n", 3,
	  "bad split rows 'x': not a decimal number" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=:0:- 1 =>\n", 3,
	  "missing split rows" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=18446744073709551616:0:- 1 =>\n",
	  3, "split rows '18446744073709551616' out of range" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=1:0:- 1 =>\n", 3,
	  "op: split rows must be at least 2, not 1" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=0:0:- 1 =>\n", 3,
	  "op: split rows must be at least 2, not 0" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split= 1 =>\n", 3,
	  "op: expected split=ROWS:INS:OUTS[:KIND], not 'split='" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0 1 =>\n", 3,
	  "op: expected split=ROWS:INS:OUTS[:KIND], not 'split=2:0'" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:-:0 1 =>\n", 3,
	  "op: split='s KIND field needs 'tpager-trace 4' (the header says 2)" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:0 1 =>\n", 3,
	  "op: split kind '0': expected local or sums=PASSES[/GRANULE], each once" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2::- 1 =>\n", 3,
	  "op: empty split input list (write '-' for none)" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0: 1 => 2:8:-\n", 3,
	  "op: empty split output list (write '-' for none)" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0,,1:- 1 1 =>\n", 3,
	  "missing split input index" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0,:- 1 1 =>\n", 3,
	  "missing split input index" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0x:- 1 =>\n", 3,
	  "bad split input index '0x': not a decimal number" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:-,0:- 1 =>\n", 3,
	  "bad split input index '-': not a decimal number" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:-x 1 => 2:8:-\n", 3,
	  "bad split output index '-x': not a decimal number" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:99999999999999999999:- 1 =>\n",
	  3, "split input index '99999999999999999999' out of range" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:1:- 1 =>\n", 3,
	  "op: split input index 1 out of range (op has 1 inputs)" },
	{ "tpager-trace 2\nop f 1 split=2:0:- =>\n", 2,
	  "op: split input index 0 out of range (op has 0 inputs)" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:-:1 1 => 2:8:-\n", 3,
	  "op: split output index 1 out of range (op has 1 outputs)" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0,1,0:- 1 1 =>\n", 3,
	  "op: split input index 0 given twice" },
	{ "tpager-trace 2\nop f 1 split=2:-:1,1 => 2:8:- 3:8:-\n", 2,
	  "op: split output index 1 given twice" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:-:- 1 => 2:8:-\n", 3,
	  "op: split cuts no tensor (INS and OUTS are both '-')" },
	{ "tpager-trace 2\ntensor 1 8 input\ntensor 2 9 input\nop f 1 split=2:0,1:- 1 2 =>\n",
	  4, "op: split input 1 has 9 bytes, not a multiple of 2 rows" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=4:0:0 1 => 2:6:-\n", 3,
	  "op: split output 0 has 6 bytes, not a multiple of 4 rows" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:0 1 => 2:8:-:view=0\n",
	  3, "op: split output 0 is a view: only new outputs can be cut" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:- 1 => 2:8:-:inplace=0\n",
	  3, "op: an op with an in-place output cannot be split" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:-:1 1 1 => 2:8:-:inplace=0 3:8:-\n",
	  3, "op: an op with an in-place output cannot be split" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 1 split=2:0:- =>\n", 3,
	  "op: split= must come right after the cost" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:- split=2:0:- 1 =>\n",
	  3, "op: split= must come right after the cost" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 1 => split=2:0:-\n", 3,
	  "op: split= must come right after the cost" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:- 1\n", 3,
	  "op: missing '=>'" },
	/* split='s KIND field (version 4) */
	{ "tpager-trace 3\ntensor 1 8 input\nop f 1 split=2:0:-:local 1 =>\n",
	  3, "op: split='s KIND field needs 'tpager-trace 4' (the header says 3)" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:sums=0 1 =>\n",
	  3, "op: split passes must be 1 to 4294967295, not 0" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:sums=1/2 1 =>\n",
	  3, "op: split granule 2 is not below its 2 rows" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:sums=x 1 =>\n",
	  3, "bad split passes 'x': not a decimal number" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:loca 1 =>\n",
	  3, "op: split kind 'loca': expected local or sums=PASSES[/GRANULE], each once" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:local,local 1 =>\n",
	  3, "op: split kind 'local': expected local or sums=PASSES[/GRANULE], each once" },
	{ "tpager-trace 4\ntensor 1 8 input\nop f 1 split=2:0:-:local: 1 =>\n",
	  3, "op: expected split=ROWS:INS:OUTS[:KIND], not 'split=2:0:-:local:'" },
	{ "tpager-trace 2\ntensor 1 8 input\nop f 1 split=2:0:- 1 =>\nop g 1 split=2:0:- 2 =>\n",
	  4, "tensor 2 is not defined" },
	/* The end record (version 3). */
	{ "tpager-trace 3\n", 1,
	  "truncated: the trace stops after this line, without its end record" },
	{ "tpager-trace 3\ntensor 1 8 input\n", 2,
	  "truncated: the trace stops after this line, without its end record" },
	{ "tpager-trace 3\ntensor 1 8 input\nfree 1", 3,
	  "truncated: the trace stops after this line, without its end record" },
	{ "tpager-trace 3\ntensor 1 8 input\n# end\n\n", 4,
	  "truncated: the trace stops after this line, without its end record" },
	{ "tpager-trace 3\ntensor 1 8 input\nen", 3, "unknown record 'en'" },
	{ "tpager-trace 3\ntensor 1 8 input\nend\nfree 1\n", 4,
	  "'free' after the end record (line 3)" },
	{ "tpager-trace 3\nend\n\nend\n", 4, "'end' after the end record (line 2)" },
	{ "tpager-trace 3\nend 1\n", 2, "end: takes no fields" },
	{ "tpager-trace 2\ntensor 1 8 input\nend\n", 3,
	  "end: needs 'tpager-trace 3' (the header says 2)" },
	{ "tpager-trace 1\nend\n", 2,
	  "end: needs 'tpager-trace 3' (the header says 1)" },
};

static void test_malformed(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tp_trace *t = (struct tp_trace *)&t;
		struct tp_trace_error err;
		size_t len = strlen(bad[i].text);
		int rc;

		/* The NUL-byte case carries its NUL inside. */
		if (strstr(bad[i].reason, "NUL"))
			len += 2;
		memset(&err, 0, sizeof(err));
		rc = tp_trace_parse(bad[i].text, len, "bad.trace", &t, &err);
		ok(rc == -EINVAL && err.line == bad[i].line &&
		   !strcmp(err.reason, bad[i].reason) &&
		   !strcmp(err.file, "bad.trace") &&
		   t == (struct tp_trace *)&t,
		   "bad trace %zu: line %lu, \"%s\"", i, bad[i].line,
		   bad[i].reason);
		if (rc != -EINVAL || err.line != bad[i].line ||
		    strcmp(err.reason, bad[i].reason))
			diag("got %d, line %lu, \"%s\"", rc, err.line,
			     err.reason);
	}
}

/* The ops of split_sample, as tp_trace_set_split() would mark them. */
static const char split_sample[] =
	"tpager-trace 2\n"
	"tensor 10 4096 input\n"				/* t0 */
	"tensor 11 256 param\n"				/* t1 */
	"op mm 100 split=64:0:0 10 11 => 12:8192:activation,computable\n"
	"op mm_bwd 200 split=128:0,1:0 12 10 11 => 13:4096:grad,computable 14:256:grad,computable\n"
	"op sum 5 split=2:-:1 12 => 15:7:computable 16:16:computable\n"
	"op view 1 12 => 17:8192:activation,computable:view=0\n"
	"op cat 3 split=4:1,0:- 10 12 => 18:12288:computable\n"
	"op add_ 1 18 => 19:12288:computable:inplace=0\n";

static const struct {
	uint64_t rows, in, out;
} split_want[] = {
	{ 64, 1, 1 }, { 128, 3, 1 }, { 2, 0, 2 }, { 0, 0, 0 }, { 4, 3, 0 },
	{ 0, 0, 0 },
};

static void test_split(void)
{
	struct tp_trace *t = NULL, *t2 = NULL;
	struct tp_trace_error err;
	char *text = NULL, *text2 = NULL;
	size_t len = 0, len2 = 0, i;
	const char *v2 = "tpager-trace 2\ntensor 1 8 input\n";
	bool marks = true;
	FILE *f;
	int rc;

	rc = tp_trace_parse(split_sample, sizeof(split_sample) - 1,
			    "split.trace", &t, &err);
	if (!ok_rc(rc, "version 2 with split marks parses"))
		bail_out("%s:%lu: %s", err.file, err.line, err.reason);
	for (i = 0; i < ARRAY_SIZE(split_want); i++) {
		const struct tp_trace_op *op = &t->ops[i];

		if (op->split_rows == split_want[i].rows &&
		    op->split_in == split_want[i].in &&
		    op->split_out == split_want[i].out)
			continue;
		marks = false;
		diag("op %zu: split %llu:%llx:%llx", i,
		     (unsigned long long)op->split_rows,
		     (unsigned long long)op->split_in,
		     (unsigned long long)op->split_out);
	}
	ok(t->n_ops == ARRAY_SIZE(split_want) && marks,
	   "rows and cut masks as written; unmarked ops have none");

	f = open_memstream(&text, &len);
	rc = tp_trace_write(t, f);
	fclose(f);
	ok(!rc && !strncmp(text, "tpager-trace 3\n", 15) &&
	   strstr(text, "op mm_bwd 200 split=128:0,1:0 2 0 1 => ") &&
	   strstr(text, "op sum 5 split=2:-:1 2 => ") &&
	   strstr(text, "op cat 3 split=4:0,1:- 0 2 => ") &&
	   strstr(text, "op view 1 2 => "),
	   "written as version 3, indexes in order, '-' for none");
	rc = tp_trace_parse(text, len, "out.trace", &t2, &err);
	ok(!rc && tp_trace_equal(t, t2), "written text parses to an equal trace");
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	f = open_memstream(&text2, &len2);
	rc = tp_trace_write(t2, f);
	fclose(f);
	ok(!rc && len == len2 && !memcmp(text, text2, len),
	   "and writes the same bytes again");
	t2->ops[1].split_rows = 64;
	ok(!tp_trace_equal(t, t2), "traces differing in split rows differ");
	t2->ops[1].split_rows = 128;
	t2->ops[1].split_out = 0;
	ok(!tp_trace_equal(t, t2), "and in the outputs cut");
	t2->ops[1].split_out = 1;
	t2->ops[1].split_in = 1;
	ok(!tp_trace_equal(t, t2), "and in the inputs cut");
	tp_trace_free(t);
	tp_trace_free(t2);
	free(text);
	free(text2);
	t = t2 = NULL;

	rc = tp_trace_parse(v2, strlen(v2), "v2", &t, &err);
	text = NULL;
	f = open_memstream(&text, &len);
	if (!rc)
		rc = tp_trace_write(t, f);
	fclose(f);
	ok(!rc && !strcmp(text, "tpager-trace 3\ntensor 0 8 input\nend\n"),
	   "version 2 without marks parses, and is written as version 3");
	tp_trace_free(t);
	free(text);
}

/*
 * How the parts read (version 4): local, or summing in passes from a
 * granule's rows, read and written back as they were, part of a trace's
 * equality; a new split mark drops them; a trace without them is written
 * as version 3.
 */
static void test_split_kind(void)
{
	const char *text =
		"tpager-trace 4\n"
		"tensor 0 4096 input\n"
		"tensor 1 4096 input\n"
		"op conv2d_bwd 9 split=512:0,1:0:sums=1/128 0 1 => 2:4096:grad,computable 3:64:grad,computable\n"
		"op batchnorm 3 split=8:0:0:sums=3 2 => 4:4096:computable 5:8:computable\n"
		"op relu 1 split=8:0:0:local 4 => 6:4096:computable\n"
		"op odd 1 split=8:0:0:local,sums=2/2 6 => 7:4096:computable\n"
		"end\n";
	struct tp_trace *t = NULL, *t2 = NULL;
	struct tp_trace_error err;
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	rc = tp_trace_parse(text, strlen(text), "sums.trace", &t, &err);
	if (!ok_rc(rc, "version 4 with the parts' kinds parses"))
		bail_out("%s:%lu: %s", err.file, err.line, err.reason);
	ok(t->ops[0].split_passes == 1 && t->ops[0].split_granule == 128 &&
	   t->ops[1].split_passes == 3 && !t->ops[1].split_granule &&
	   !t->ops[0].split_local && !t->ops[1].split_local &&
	   t->ops[2].split_local && !t->ops[2].split_passes &&
	   t->ops[3].split_local && t->ops[3].split_passes == 2 &&
	   t->ops[3].split_granule == 2,
	   "local, passes and granule as written");
	f = open_memstream(&out, &len);
	rc = tp_trace_write(t, f);
	fclose(f);
	ok(!rc && len == strlen(text) && !memcmp(out, text, len),
	   "written back byte for byte, as version 4");
	free(out);
	rc = tp_trace_parse(text, strlen(text), "sums.trace", &t2, &err);
	t2->ops[1].split_passes = 2;
	ok(!rc && !tp_trace_equal(t, t2), "traces differing in passes differ");
	ok(tp_trace_set_split_kind(t, 1, false, 0, 2) == -EINVAL &&
	   tp_trace_set_split_kind(t, 1, false, 1, 8) == -EINVAL &&
	   tp_trace_set_split_kind(t, 9, true, 1, 0) == -EINVAL &&
	   t->ops[1].split_passes == 3 && !t->ops[1].split_local,
	   "tp_trace_set_split_kind: a granule without passes, a granule of every row, no such op: -EINVAL, the mark unchanged");
	out = NULL;
	f = open_memstream(&out, &len);
	rc = tp_trace_set_split(t, 0, 512, 1, 1) ||
	     tp_trace_set_split(t, 1, 8, 1, 1) ||
	     tp_trace_set_split(t, 2, 8, 1, 1) ||
	     tp_trace_set_split(t, 3, 8, 1, 1) || tp_trace_write(t, f);
	fclose(f);
	ok(!rc && !t->ops[0].split_passes && !strncmp(out, "tpager-trace 3\n", 15) &&
	   strstr(out, " split=512:0:0 0 1 => "),
	   "a new split mark drops them; without any, written as version 3");
	free(out);
	tp_trace_free(t);
	tp_trace_free(t2);
}

/* Only the first 64 operands can be cut; a full record still fits. */
static void test_split_limits(void)
{
	size_t cap = 64 * 1024, n;
	char *buf = malloc(cap);
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	int rc;

	if (!buf)
		bail_out("out of memory");
	for (unsigned k = 63; k <= 64; k++) {
		n = (size_t)snprintf(buf, cap,
				     "tpager-trace 2\ntensor 0 8 input\nop f 1 split=2:%u:-",
				     k);
		for (int i = 0; i < 70; i++)
			n += (size_t)snprintf(buf + n, cap - n, " 0");
		n += (size_t)snprintf(buf + n, cap - n, " =>\n");
		rc = tp_trace_parse(buf, n, "limits", &t, &err);
		if (k == 63)
			ok(!rc && t->ops[0].split_in == 1ull << 63,
			   "input 63 of 70 can be cut");
		else
			ok(rc == -EINVAL && err.line == 3 &&
			   !strcmp(err.reason, "op: split input index 64: only the first 64 inputs can be cut"),
			   "input 64 cannot: %s", err.reason);
		tp_trace_free(t);
		t = NULL;
	}

	n = (size_t)snprintf(buf, cap,
			     "tpager-trace 2\ntensor 0 8 input\nop f 1 split=2:254:254");
	for (int i = 0; i < 255; i++)
		n += (size_t)snprintf(buf + n, cap - n, " 0");
	n += (size_t)snprintf(buf + n, cap - n, " =>");
	for (int i = 0; i < 255; i++)
		n += (size_t)snprintf(buf + n, cap - n, " %d:8:-", i + 1);
	n += (size_t)snprintf(buf + n, cap - n, "\n");
	rc = tp_trace_parse(buf, n, "limits", &t, &err);
	ok(rc == -EINVAL && err.line == 3 &&
	   !strcmp(err.reason, "op: split input index 254: only the first 64 inputs can be cut"),
	   "255 inputs, 255 outputs and a split mark are one record: %s",
	   err.reason);
	tp_trace_free(t);
	free(buf);
}

/* tp_trace_set_split(): each refusal is -EINVAL and changes nothing. */
static void test_set_split(void)
{
	struct tp_trace *t = tp_trace_new();
	struct tp_trace_out_spec o[2] = {
		{ 8, TP_TRACE_COMPUTABLE, TP_TRACE_OUT_FRESH, 0 },
		{ 8, TP_TRACE_COMPUTABLE, TP_TRACE_OUT_VIEW, 0 },
	};
	struct tp_trace_out_spec ip = { 8, TP_TRACE_COMPUTABLE,
					TP_TRACE_OUT_INPLACE, 0 };
	uint32_t a, b, in[2], first;
	const struct tp_trace_op *op;
	static const struct {
		uint32_t op;
		uint64_t rows, in, out;
		const char *why;
	} refused[] = {
		{ 2, 2, 1, 0, "no such op" },
		{ UINT32_MAX, 2, 1, 0, "op UINT32_MAX" },
		{ 0, 0, 1, 0, "0 rows" },
		{ 0, 1, 1, 0, "1 row" },
		{ 0, 2, 0, 0, "nothing cut" },
		{ 0, 2, 4, 0, "input 2 of 2" },
		{ 0, 2, 1ull << 63, 0, "input 63 of 2" },
		{ 0, 2, 0, 4, "output 2 of 2" },
		{ 0, 2, 0, 2, "a view output" },
		{ 0, 2, 2, 0, "an input of 9 bytes in 2 rows" },
		{ 0, 16, 0, 1, "an output of 8 bytes in 16 rows" },
		{ 1, 2, 1, 0, "an op with an in-place output" },
	};
	bool same = true;

	if (!t || tp_trace_add_tensor(t, 8, 0, TP_TRACE_NONE, &a) ||
	    tp_trace_add_tensor(t, 9, 0, TP_TRACE_NONE, &b))
		bail_out("building the trace");
	in[0] = a;
	in[1] = b;
	if (tp_trace_add_op(t, "f", 1, 1, in, 2, o, 2, &first) ||
	    tp_trace_add_op(t, "g", 1, 1, in, 1, &ip, 1, &first))
		bail_out("adding the ops");
	op = &t->ops[0];
	ok(op->split_rows == 0 && op->split_in == 0 && op->split_out == 0 &&
	   t->ops[1].split_rows == 0, "ops start unmarked");
	ok(!tp_trace_set_split(t, 0, 4, 1, 1) && op->split_rows == 4 &&
	   op->split_in == 1 && op->split_out == 1,
	   "input 0 and output 0 in 4 rows");
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		int rc = tp_trace_set_split(t, refused[i].op, refused[i].rows,
					    refused[i].in, refused[i].out);

		if (rc == -EINVAL && op->split_rows == 4 &&
		    op->split_in == 1 && op->split_out == 1 &&
		    !t->ops[1].split_rows && !t->ops[1].split_in &&
		    !t->ops[1].split_out)
			continue;
		same = false;
		diag("%s: %d, op 0 now %llu:%llx:%llx", refused[i].why, rc,
		     (unsigned long long)op->split_rows,
		     (unsigned long long)op->split_in,
		     (unsigned long long)op->split_out);
	}
	ok(same, "%zu refusals: -EINVAL, both ops unchanged",
	   ARRAY_SIZE(refused));
	ok(!tp_trace_set_split(t, 0, 8, 0, 1) && op->split_rows == 8 &&
	   op->split_in == 0 && op->split_out == 1,
	   "a second mark replaces the first");
	tp_trace_free(t);
}

static void test_error_str(void)
{
	struct tp_trace_error err = { "a.trace", 7, "unknown record 'x'" };
	char buf[256];

	ok(!strcmp(tp_trace_error_str(&err, buf, sizeof(buf)),
		   "a.trace:7: unknown record 'x'"), "file:line: reason");
	err.line = 0;
	ok(!strcmp(tp_trace_error_str(&err, buf, sizeof(buf)),
		   "a.trace: unknown record 'x'"), "file: reason without a line");
}

/* The builder: bad calls fail with the documented errno, change nothing. */
static void test_builder(void)
{
	struct tp_trace *t = tp_trace_new();
	struct tp_trace_out_spec o = { 8, TP_TRACE_COMPUTABLE,
				       TP_TRACE_OUT_INPLACE, 0 };
	struct tp_trace_out_spec two[2] = { o, o };
	uint32_t a, b, in[2];
	size_t nt, ne, no;

	if (!t)
		bail_out("tp_trace_new");
	ok(!tp_trace_add_tensor(t, 8, TP_TRACE_INPUT, TP_TRACE_NONE, &a) &&
	   !tp_trace_add_tensor(t, 8, TP_TRACE_INPUT, TP_TRACE_NONE, &b) &&
	   a == 0 && b == 1, "two tensors, ids 0 and 1");
	nt = t->n_tensors;
	ne = t->n_events;
	no = t->n_ops;
	in[0] = a;
	in[1] = 9;
	ok(tp_trace_add_tensor(t, 8, 1u << 9, TP_TRACE_NONE, &b) == -EINVAL,
	   "unknown flag: -EINVAL");
	ok(tp_trace_add_tensor(t, 8, 0, 5, &b) == -ENOENT,
	   "view of a missing tensor: -ENOENT");
	ok(tp_trace_add_op(t, "f", 1, 1, in, 2, &o, 1, &b) == -ENOENT,
	   "missing input: -ENOENT");
	in[1] = a;
	ok(tp_trace_add_op(t, "f", 1, 1, in, 2, two, 2, &b) == -EINVAL,
	   "one input overwritten twice: -EINVAL");
	ok(tp_trace_add_op(t, "f g", 3, 1, in, 2, &o, 1, &b) == -EINVAL &&
	   tp_trace_add_op(t, "", 0, 1, in, 2, &o, 1, &b) == -EINVAL,
	   "names with a blank, or empty: -EINVAL");
	o.alias = 2;
	ok(tp_trace_add_op(t, "f", 1, 1, in, 2, &o, 1, &b) == -EINVAL,
	   "alias index past the inputs: -EINVAL");
	ok(tp_trace_add_mark(t, TP_TRACE_EV_MEASURE_END) == -EINVAL &&
	   tp_trace_add_mark(t, TP_TRACE_EV_OP) == -EINVAL,
	   "measure end without begin, or a non-mark kind: -EINVAL");
	ok(t->n_tensors == nt && t->n_events == ne && t->n_ops == no &&
	   t->n_args == 0 && t->n_outs == 0 &&
	   t->tensors[a].state == TP_TRACE_LIVE,
	   "nothing changed by the failed calls");
	ok(!tp_trace_add_free(t, a) && tp_trace_add_free(t, a) == -ESTALE &&
	   tp_trace_add_free(t, 7) == -ENOENT,
	   "free once; again -ESTALE; missing -ENOENT");
	tp_trace_free(t);

	/* Sizes near 2^64 add up without wrapping. */
	{
		struct tp_trace_summary s;

		t = tp_trace_new();
		if (!t || tp_trace_add_tensor(t, UINT64_MAX / 2 + 1, 0,
					      TP_TRACE_NONE, &a) ||
		    tp_trace_add_tensor(t, UINT64_MAX / 2 + 1, 0,
					TP_TRACE_NONE, &b) ||
		    tp_trace_add_free(t, a) || tp_trace_peak(t, &s))
			bail_out("building the large trace");
		ok(s.peak_bytes == UINT64_MAX &&
		   s.end_bytes == UINT64_MAX / 2 + 1,
		   "a peak past 2^64 - 1 reads as UINT64_MAX, then comes down");
		tp_trace_free(t);
	}
	tp_trace_free(NULL);
}

/*
 * A written trace cut anywhere but after its last newline is refused; at a
 * line boundary, as truncated, naming the last line kept. Versions 1 and
 * 2 have no end record: cut at a line boundary they read as before.
 */
static void test_end(void)
{
	static const char v3[] =
		"tpager-trace 3\ntensor 1 8 input\nfree 1\nend\n# after\n\n";
	struct tp_trace *t = NULL, *t2 = NULL;
	struct tp_trace_error err;
	unsigned long line = 1, wrong_line = 0;
	size_t len = 0, accepted = 0, at_boundary = 0;
	char *text = NULL;
	FILE *f;
	int rc;

	rc = tp_trace_parse(v3, sizeof(v3) - 1, "v3", &t, &err);
	ok(!rc && t->n_events == 2 && t->records == 2,
	   "version 3: comments and blank lines may follow the end record, which is no event");
	tp_trace_free(t);
	t = NULL;
	rc = tp_trace_parse(v3, strlen("tpager-trace 3\ntensor 1 8 input\nfree 1\nend"),
			    "v3", &t, &err);
	ok(!rc && t->n_events == 2, "an end record without its newline");
	tp_trace_free(t);
	t = NULL;

	rc = tp_trace_parse(sample, sizeof(sample) - 1, "sample", &t, &err);
	f = open_memstream(&text, &len);
	if (!rc)
		rc = tp_trace_write(t, f);
	fclose(f);
	if (rc || len < 5)
		bail_out("writing the sample");
	for (size_t n = 0; n < len - 1; n++) {
		rc = tp_trace_parse(text, n, "cut", &t2, &err);
		if (!rc) {
			accepted++;
			tp_trace_free(t2);
			t2 = NULL;
		} else if (n && text[n - 1] == '\n') {
			at_boundary++;
			if (err.line != line - 1 ||
			    strcmp(err.reason, "truncated: the trace stops after this line, without its end record"))
				wrong_line = line;
		}
		if (n < len && text[n] == '\n')
			line++;
	}
	ok(!accepted, "the written sample cut after any of its %zu bytes is refused (%zu accepted)",
	   len - 1, accepted);
	ok(at_boundary == line - 1 && !wrong_line,
	   "cut at each of its %zu line boundaries: truncated, naming the last line kept%s",
	   at_boundary, wrong_line ? " (not so at a boundary)" : "");
	tp_trace_free(t);
	free(text);

	rc = tp_trace_parse(sample, (size_t)(strstr(sample, "free 10") - sample),
			    "v1", &t, &err);
	ok(!rc && t->n_ops == 3,
	   "version 1 cut at a line boundary reads as before: no end record to miss");
	tp_trace_free(t);
}

/* The EXAMPLE of tpager-trace(5) is a valid trace. */
static void test_man_example(void)
{
	const char *top = getenv("top_srcdir");
	char path[4200], *buf = NULL, *b, *e;
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	size_t len = 0;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%.4000s/man/tpager-trace.5",
		 top ? top : "..");
	f = fopen(path, "r");
	if (!f) {
		skip(2, "no %s", path);
		return;
	}
	if (getdelim(&buf, &len, '\0', f) < 0)
		bail_out("cannot read %s", path);
	fclose(f);
	b = strstr(buf, ".SH EXAMPLE\n.nf\n");
	e = b ? strstr(b, "\n.fi\n") : NULL;
	if (!ok(b && e, "the page has an EXAMPLE")) {
		skip(1, "no example");
		free(buf);
		return;
	}
	b += strlen(".SH EXAMPLE\n.nf\n");
	rc = tp_trace_parse(b, (size_t)(e - b) + 1, "tpager-trace.5", &t, &err);
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	ok(!rc && t->n_ops == 6 && t->tensors[1].state == TP_TRACE_OVERWRITTEN &&
	   t->ops[0].split_rows == 64 && t->ops[0].split_in == 1 &&
	   t->ops[0].split_out == 1,
	   "it parses: 6 ops, the first split, the parameter updated in place");
	tp_trace_free(t);
	free(buf);
}

int main(void)
{
	plan_tests(17 + ARRAY_SIZE(bad) + 9 + 6 + 3 + 4 + 2 + 11 + 2 + 5);
	test_man_example();
	test_sample();
	test_malformed();
	test_end();
	test_split();
	test_split_kind();
	test_split_limits();
	test_set_split();
	test_error_str();
	test_builder();
	return exit_status();
}
