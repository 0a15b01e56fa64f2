// SPDX-License-Identifier: MIT
/*
 * tpager-train's recorder (tools/train_record.c) and split marks: an op
 * whose type is splittable and says how a run is cut is recorded with the
 * marks its split callback gives, for the run's own sizes; an op that is
 * not splittable, has no callback, refuses, runs in place or gives a cut
 * the trace cannot hold is recorded whole, and the recording goes on.
 * Linked with the --wrap of tpager-train, on the sim backend.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "tools/train.h"
#include "tests/tap.h"

/* What the split callback answers, as the op's params. */
struct cut {
	int rc;
	size_t rows;
	uint64_t in, out;
};

/* What the last call of the callback was given, and the calls so far. */
static struct {
	unsigned calls, n_in, n_out;
	size_t in_bytes[4], out_bytes[4];
} seen;

static int cut_split(const void *params, size_t params_len,
		     const size_t *in_bytes, unsigned n_in,
		     const size_t *out_bytes, unsigned n_out,
		     struct tp_op_split *s)
{
	const struct cut *c = params;

	seen.calls++;
	seen.n_in = n_in;
	seen.n_out = n_out;
	for (unsigned i = 0; i < n_in && i < 4; i++)
		seen.in_bytes[i] = in_bytes[i];
	for (unsigned j = 0; j < n_out && j < 4; j++)
		seen.out_bytes[j] = out_bytes[j];
	if (params_len != sizeof(*c))
		return -EINVAL;
	s->rows = c->rows;
	s->in = c->in;
	s->out = c->out;
	return c->rc;
}

static int nop_launch(const struct tp_op_launch *l)
{
	return 0;	/* sim: never called */
}

static const struct tp_op_type rows_op = {
	.name = "rows", .launch = nop_launch, .flags = TP_OP_SPLITTABLE,
	.split = cut_split,
};
static const struct tp_op_type unflagged = {
	.name = "unflagged", .launch = nop_launch, .split = cut_split,
};
static const struct tp_op_type no_callback = {
	.name = "no_callback", .launch = nop_launch,
	.flags = TP_OP_SPLITTABLE,
};
static const struct tp_op_type in_place = {
	.name = "in_place_", .launch = nop_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_INPLACE, .split = cut_split,
};

static struct tp_ctx *ctx;

static void run(const struct tp_op_type *type, const struct cut *c,
	       struct tp_tensor *a, struct tp_tensor *b,
	       struct tp_tensor **out, size_t bytes0, size_t bytes1)
{
	struct tp_tensor *in[2] = { a, b };
	size_t bytes[2] = { bytes0, bytes1 };
	int rc;

	rc = tp_op_run(ctx, type, c, sizeof(*c), in, b ? 2 : 1, out, bytes,
		       bytes1 ? 2 : 1);
	if (rc)
		bail_out("tp_op_run(%s): %s", type->name, tp_strerror(rc));
}

static bool marked(const struct tp_trace *t, uint32_t op, uint64_t rows,
		   uint64_t in, uint64_t out)
{
	const struct tp_trace_op *o = &t->ops[op];

	if (o->split_rows == rows && o->split_in == in && o->split_out == out)
		return true;
	diag("op %u (%s): split %llu:%llx:%llx", op, tp_trace_op_name(t, op),
	     (unsigned long long)o->split_rows,
	     (unsigned long long)o->split_in,
	     (unsigned long long)o->split_out);
	return false;
}

static void check_text(const struct tp_trace *t)
{
	struct tp_trace *back = NULL;
	struct tp_trace_error err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		bail_out("open_memstream");
	rc = tp_trace_write(t, f);
	fclose(f);
	ok(!rc && !strncmp(text, "tpager-trace 3\n", 15) &&
	   strstr(text, " split=64:0:0 ") && strstr(text, " split=128:0,1:0 ") &&
	   len >= 4 && !strcmp(text + len - 4, "end\n"),
	   "written as version 3 with its split marks and end record");
	rc = tp_trace_parse(text, len, "recorded", &back, &err);
	if (rc)
		diag("%s:%lu: %s", err.file, err.line, err.reason);
	ok(!rc && tp_trace_equal(t, back), "and read back equal");
	tp_trace_free(back);
	free(text);
}

int main(void)
{
	const struct cut cut_1 = { 0, 64, 1, 1 };	/* x and y */
	const struct cut cut_3 = { 0, 128, 3, 1 };	/* y, w and g */
	const struct cut refuse = { -EINVAL, 64, 1, 1 };
	const struct cut uneven = { 0, 3, 1, 0 };	/* 8192 % 3 */
	struct tp_tensor *x, *w, *y, *o[2], *z;
	struct tp_trace *t = NULL;
	unsigned calls;
	int rc;

	plan_tests(9);
	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=4K,"
			    "pager.budget=64M");
	if (!ctx)
		bail_out("tp_ctx_create(sim): %s", strerror(errno));
	if (tp_rec_start(ctx, TP_REC_MODELLED))
		bail_out("tp_rec_start");
	x = tp_tensor_create(ctx, 4096, TP_KIND_INPUT);
	w = tp_tensor_create(ctx, 256, TP_KIND_PARAM);
	if (!x || !w)
		bail_out("tp_tensor_create");

	run(&rows_op, &cut_1, x, w, &y, 8192, 0);		/* op 0 */
	ok(seen.calls == 1 && seen.n_in == 2 && seen.n_out == 1 &&
	   seen.in_bytes[0] == 4096 && seen.in_bytes[1] == 256 &&
	   seen.out_bytes[0] == 8192,
	   "the callback gets the run's input and output sizes");
	run(&rows_op, &cut_3, y, w, o, 4096, 256);		/* op 1 */
	run(&rows_op, &refuse, y, NULL, &z, 64, 0);		/* op 2 */
	run(&rows_op, &uneven, y, NULL, &z, 64, 0);		/* op 3 */
	calls = seen.calls;
	run(&unflagged, &cut_1, x, NULL, &z, 4096, 0);		/* op 4 */
	run(&no_callback, &cut_1, x, NULL, &z, 4096, 0);	/* op 5 */
	/* y is computable: the in-place output is recorded as a new tensor */
	run(&in_place, &cut_1, y, NULL, &z, 8192, 0);		/* op 6 */
	ok(seen.calls == calls,
	   "no callback for an op not splittable, or in place");

	rc = tp_rec_stop(&t);
	if (!ok_rc(rc, "the recording succeeds, refused cuts and all") || !t)
		bail_out("no trace");
	ok(t->n_ops == 7, "every op recorded (%zu)", t->n_ops);
	ok(marked(t, 0, 64, 1, 1) && marked(t, 1, 128, 3, 1),
	   "splittable ops carry the callback's marks");
	ok(marked(t, 2, 0, 0, 0) && marked(t, 3, 0, 0, 0),
	   "a refused cut, or one the trace cannot hold, is recorded whole");
	ok(marked(t, 4, 0, 0, 0) && marked(t, 5, 0, 0, 0) &&
	   marked(t, 6, 0, 0, 0),
	   "no marks without the flag, without a callback, or in place");
	check_text(t);
	tp_trace_free(t);
	tp_ctx_destroy(ctx);
	return exit_status();
}
