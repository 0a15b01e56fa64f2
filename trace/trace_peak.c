// SPDX-License-Identifier: MIT
/*
 * The reference accounting of a trace: what it needs with unlimited
 * memory. Budget ratios and overheads of every replay are relative to
 * these two numbers, so they follow DTR's definitions exactly
 * (dtr-log-format.md): the peak is the largest sum of live storage sizes
 * during the measured iteration, and the compute time the sum of the costs
 * of its ops. A storage counts once however many views or versions share
 * it, from the event that creates it until its last tensor is freed.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

/* 128 bits: sizes are any 64-bit values, their sum cannot wrap. */
typedef unsigned __int128 tp_bytes128;

struct acct {
	const struct tp_trace *t;
	uint32_t *live;		/* live tensors per storage */
	tp_bytes128 bytes;
};

static uint64_t clamp64(tp_bytes128 v)
{
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static void tensor_born(struct acct *a, uint32_t id)
{
	uint32_t s = a->t->tensors[id].storage;

	if (!a->live[s]++)
		a->bytes += a->t->storages[s].size;
}

static void tensor_dies(struct acct *a, uint32_t id)
{
	uint32_t s = a->t->tensors[id].storage;

	if (!--a->live[s])
		a->bytes -= a->t->storages[s].size;
}

static void apply(struct acct *a, const struct tp_trace_event *e)
{
	const struct tp_trace *t = a->t;
	const struct tp_trace_op *op;

	switch (e->kind) {
	case TP_TRACE_EV_TENSOR:
		tensor_born(a, e->arg);
		break;
	case TP_TRACE_EV_OP:
		op = &t->ops[e->arg];
		/* All outputs exist together while the op runs. */
		for (unsigned j = 0; j < op->n_outs; j++)
			tensor_born(a, t->outs[op->first_out + j].tensor);
		for (unsigned j = 0; j < op->n_outs; j++) {
			const struct tp_trace_out *o = &t->outs[op->first_out + j];

			if (o->kind == TP_TRACE_OUT_INPLACE)
				tensor_dies(a, t->args[op->first_arg + o->alias]);
		}
		break;
	case TP_TRACE_EV_FREE:
		tensor_dies(a, e->arg);
		break;
	default:
		break;
	}
}

int tp_trace_peak(const struct tp_trace *t, struct tp_trace_summary *s)
{
	struct acct a = { .t = t };
	bool in = !t->measured;
	tp_bytes128 peak = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->peak_event = TP_TRACE_NONE;
	a.live = calloc(t->n_storages ? t->n_storages : 1, sizeof(*a.live));
	if (!a.live)
		return -ENOMEM;
	for (i = 0; i < t->n_events; i++) {
		const struct tp_trace_event *e = &t->events[i];

		if (e->kind == TP_TRACE_EV_MEASURE_BEGIN) {
			in = true;
			peak = a.bytes;
			s->start_bytes = clamp64(a.bytes);
			s->peak_event = (uint32_t)i;
			continue;
		}
		if (e->kind == TP_TRACE_EV_MEASURE_END)
			break;
		apply(&a, e);
		if (!in)
			continue;
		if (e->kind == TP_TRACE_EV_OP) {
			s->compute_ns += t->ops[e->arg].cost_ns;
			s->region_ops++;
		}
		if (a.bytes > peak || s->peak_event == TP_TRACE_NONE) {
			peak = a.bytes;
			s->peak_event = (uint32_t)i;
		}
	}
	s->peak_bytes = clamp64(peak);
	s->end_bytes = clamp64(a.bytes);
	free(a.live);
	return 0;
}
