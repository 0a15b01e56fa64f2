// SPDX-License-Identifier: MIT
/* The tpager-trace(5) writer: one record per event, in program order. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "trace/trace.h"
#include "trace/trace_parse.h"

static void write_flags(FILE *f, unsigned flags)
{
	static const char *const names[] = {
		"input", "param", "grad", "optstate", "activation", "computable",
	};
	bool first = true;

	if (!flags) {
		fputc('-', f);
		return;
	}
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & (1u << i)))
			continue;
		fprintf(f, "%s%s", first ? "" : ",", names[i]);
		first = false;
	}
}

/* The indexes of the bits of @mask, comma-separated, or '-'. */
static void write_cut_list(FILE *f, uint64_t mask)
{
	bool first = true;

	if (!mask) {
		fputc('-', f);
		return;
	}
	for (unsigned k = 0; k < 64; k++) {
		if (!(mask >> k & 1))
			continue;
		fprintf(f, "%s%u", first ? "" : ",", k);
		first = false;
	}
}

/* Whether an op says how its parts read: a version 4 field. */
static bool has_kind(const struct tp_trace_op *op)
{
	return op->split_local || op->split_passes;
}

static bool kinds_marked(const struct tp_trace *t)
{
	for (size_t i = 0; i < t->n_ops; i++)
		if (has_kind(&t->ops[i]))
			return true;
	return false;
}

/* split='s KIND field: ":local", ":sums=P[/G]", or both, comma-separated. */
static void write_split_kind(FILE *f, const struct tp_trace_op *op)
{
	if (!has_kind(op))
		return;
	fputc(':', f);
	if (op->split_local)
		fputs(op->split_passes ? "local," : "local", f);
	if (op->split_passes)
		fprintf(f, "sums=%" PRIu32, op->split_passes);
	if (op->split_granule)
		fprintf(f, "/%" PRIu32, op->split_granule);
}

static void write_op(const struct tp_trace *t, uint32_t id, FILE *f)
{
	const struct tp_trace_op *op = &t->ops[id];

	fprintf(f, "op %s %" PRIu64, tp_trace_op_name(t, id), op->cost_ns);
	if (op->split_rows) {
		fprintf(f, " split=%" PRIu64 ":", op->split_rows);
		write_cut_list(f, op->split_in);
		fputc(':', f);
		write_cut_list(f, op->split_out);
		write_split_kind(f, op);
	}
	for (unsigned i = 0; i < op->n_args; i++)
		fprintf(f, " %" PRIu32, t->args[op->first_arg + i]);
	fputs(" =>", f);
	for (unsigned j = 0; j < op->n_outs; j++) {
		const struct tp_trace_out *o = &t->outs[op->first_out + j];
		const struct tp_trace_tensor *x = &t->tensors[o->tensor];

		fprintf(f, " %" PRIu32 ":%" PRIu64 ":", o->tensor, x->size);
		write_flags(f, x->flags);
		if (o->kind == TP_TRACE_OUT_VIEW)
			fprintf(f, ":view=%u", o->alias);
		else if (o->kind == TP_TRACE_OUT_INPLACE)
			fprintf(f, ":inplace=%u", o->alias);
	}
	fputc('\n', f);
}

int tp_trace_write(const struct tp_trace *t, FILE *f)
{
	/*
	 * Version 3, whose end record tells a whole file from a cut, or 4
	 * where a split mark says how its parts read.
	 */
	fprintf(f, "tpager-trace %d\n", kinds_marked(t) ? TP_TRACE_TEXT_V4 :
							TP_TRACE_TEXT_V3);
	for (size_t i = 0; i < t->n_events; i++) {
		const struct tp_trace_event *e = &t->events[i];
		const struct tp_trace_tensor *x;

		switch (e->kind) {
		case TP_TRACE_EV_TENSOR:
			x = &t->tensors[e->arg];
			fprintf(f, "tensor %" PRIu32 " %" PRIu64 " ", e->arg,
				x->size);
			write_flags(f, x->flags);
			if (x->view_of != TP_TRACE_NONE)
				fprintf(f, " view=%" PRIu32, x->view_of);
			fputc('\n', f);
			break;
		case TP_TRACE_EV_OP:
			write_op(t, e->arg, f);
			break;
		case TP_TRACE_EV_FREE:
			fprintf(f, "free %" PRIu32 "\n", e->arg);
			break;
		case TP_TRACE_EV_ITER:
			fprintf(f, "iter %" PRIu32 "\n", e->arg);
			break;
		case TP_TRACE_EV_BACKWARD:
			fputs("backward\n", f);
			break;
		case TP_TRACE_EV_MEASURE_BEGIN:
			fputs("measure begin\n", f);
			break;
		case TP_TRACE_EV_MEASURE_END:
			fputs("measure end\n", f);
			break;
		}
	}
	fputs("end\n", f);
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
