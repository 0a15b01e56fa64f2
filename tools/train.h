/* SPDX-License-Identifier: MIT */
/*
 * tpager-train's op recorder: while it is on, every tp_tensor_create(),
 * tp_tensor_free() and tp_op_run() the models make is appended to a
 * struct tp_trace, so a run can be written as tpager-trace(5).
 *
 * The library has no hook for this, and the models call the public API
 * directly; the tool is linked with -Wl,--wrap for those three symbols
 * (tools/Makefile.inc), so the calls reach tools/train_record.c first.
 * Calls the library makes from inside tp_op_run() (its own outputs) are
 * not the program's and are not recorded.
 *
 * The same wrap of tp_op_run() bounds a run in time (tp_rec_deadline()),
 * recording or not.
 */
#ifndef TP_TOOLS_TRAIN_H
#define TP_TOOLS_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "tpager.h"
#include "trace/trace.h"

enum tp_rec_cost {
	TP_REC_MEASURED,	/* host clock around each op (synced) */
	TP_REC_MODELLED,	/* FLOPs and bytes against H100 figures */
};

/**
 * tp_rec_start() - record every call from now on into a new trace.
 * @ctx:  the context the ops run on (synced around ops when measuring)
 * @cost: how op costs are obtained
 *
 * Return: 0, -EBUSY when already recording, -ENOMEM.
 */
int tp_rec_start(struct tp_ctx *ctx, enum tp_rec_cost cost);

/**
 * tp_rec_iteration() - an iteration begins; @measured marks it as the
 * start of the measured (steady-state) region.
 * Return: 0 or the first recording error.
 */
int tp_rec_iteration(bool measured);

/**
 * tp_rec_stop() - stop recording and hand over the trace.
 * @out: set to the trace (the caller frees it with tp_trace_free())
 *
 * Return: 0, or the first error the recording met (the trace is then
 * freed and *@out is NULL).
 */
int tp_rec_stop(struct tp_trace **out);

/**
 * tp_rec_deadline() - from CLOCK_MONOTONIC time @ns on, every op the
 * program runs fails with -ETIMEDOUT before it starts; 0 lifts the bound.
 * An op already running finishes.
 */
void tp_rec_deadline(uint64_t ns);

/**
 * tp_rec_model_cost() - the modelled cost, in ns, of op @name with
 * @params over inputs and outputs of the given sizes (roofline on an
 * H100, trace/trace_gen.c).
 */
uint64_t tp_rec_model_cost(const char *name, const void *params,
			   size_t params_len, uint64_t in_bytes,
			   uint64_t out_bytes);

#endif /* TP_TOOLS_TRAIN_H */
