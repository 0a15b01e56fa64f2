/* SPDX-License-Identifier: MIT */
/*
 * Coop's minimum budget over replays of a trace, as tpager-sim --sweep
 * and bench/policy-table find it. Budgets are in tenths of a percent of
 * the trace's peak of live bytes; the caller replays at each and says
 * whether it fit.
 */
#ifndef TP_TRACE_SWEEP_H
#define TP_TRACE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#define TP_SWEEP_STEP	50	/* 5 %: the first descent, and going up */
#define TP_SWEEP_FINE	10	/* 1 %: below the last step that fit */
#define TP_SWEEP_MAX	2000	/* 200 %: going up when 100 % does not fit */

/* Bytes at @tenths of a percent of @peak. */
uint64_t tp_sweep_bytes(uint64_t peak, int tenths);

/* @tenths as text into @buf: "75%", "76.5%". Return: @buf. */
const char *tp_sweep_text(int tenths, char *buf, size_t len);

/**
 * tp_sweep() - the smallest budget that fits: down from 100 % in steps
 * of 5 % until a run fails, or, when 100 % fails (a pool that
 * fragments), up to 200 % until one fits; then down from the budget
 * found in steps of 1 % until a run fails; then the step between the
 * last that fit and the first that did not halved to 0.1 % (at most four
 * runs). Budgets under @least bytes are not run: going down stops there.
 * The run at the minimum found is always the last that fit.
 * @run: replays at @tenths; returns 1 when it fit, 0 when not, or a
 * negative errno that stops the sweep.
 * Return: 0 with *@min set (-1: nothing fit up to 200 %), or @run's error.
 */
int tp_sweep(uint64_t peak, uint64_t least,
	     int (*run)(void *priv, int tenths), void *priv, int *min);

#endif /* TP_TRACE_SWEEP_H */
