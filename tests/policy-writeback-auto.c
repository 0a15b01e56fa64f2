/* SPDX-License-Identifier: MIT */
/*
 * policy.writeback = auto's trial: which iterations are timed and with
 * which setting, the decision from their times (ties to off), a trial
 * started over when an iteration has no record, and the trial taken
 * again after TP_WB_AUTO_RETRY iterations.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "policy/writeback_auto.h"
#include "tap.h"

/* One iteration: begin (timed at @t0 when asked), end at @t1. */
static bool step(struct tp_wb_auto *w, bool predicted, uint64_t t0,
		 uint64_t t1, bool *on)
{
	bool timed = tp_wb_auto_begin(w, predicted);

	if (timed)
		tp_wb_auto_timed(w, t0);
	*on = tp_wb_auto_on(w);
	if (timed != tp_wb_auto_timing(w))
		return !timed;	/* a mismatch reads as the opposite */
	tp_wb_auto_end(w, timed ? t1 : 0);
	return timed;
}

/* A whole trial from TRY_OFF: off takes @off ns, on @on_ns. */
static bool trial(struct tp_wb_auto *w, uint64_t off, uint64_t on_ns)
{
	bool on, ok1, ok2, ok3;

	ok1 = step(w, true, 1000, 1000 + off, &on) && !on;
	ok2 = !step(w, true, 0, 0, &on) && on;
	ok3 = step(w, true, 5000, 5000 + on_ns, &on) && on;
	return ok1 && ok2 && ok3 && w->phase == TP_WB_DECIDED;
}

int main(void)
{
	struct tp_wb_auto w;
	bool on, timed, all;

	plan_tests(9);

	tp_wb_auto_init(&w);
	timed = step(&w, false, 0, 0, &on);
	ok(!timed && !on && w.phase == TP_WB_TRY_OFF,
	   "without a record: untimed, off, the trial waits");

	ok(trial(&w, 1000, 900) && tp_wb_auto_on(&w) && w.off_ns == 1000 &&
	   w.on_ns == 900 && w.trials == 1,
	   "off timed, on settled then timed; on ran faster: kept on");

	all = true;
	for (unsigned i = 1; i < TP_WB_AUTO_RETRY; i++) {
		timed = step(&w, true, 0, 0, &on);
		all &= !timed && on;
	}
	ok(all && w.phase == TP_WB_DECIDED,
	   "decided: %u iterations untimed and on", TP_WB_AUTO_RETRY - 1);

	timed = step(&w, true, 0, 700, &on);
	ok(timed && !on && w.phase == TP_WB_SETTLE_ON && w.off_ns == 700,
	   "the %u-th iteration after the decision starts a new trial, off",
	   TP_WB_AUTO_RETRY);
	timed = step(&w, true, 0, 0, &on);
	timed |= step(&w, true, 0, 800, &on);
	ok(timed && w.phase == TP_WB_DECIDED && !tp_wb_auto_on(&w) &&
	   w.trials == 2, "on now slower (800 against 700): dropped");

	tp_wb_auto_init(&w);
	ok(trial(&w, 500, 500) && !tp_wb_auto_on(&w),
	   "a tie keeps it off: copies that save nothing are not made");

	tp_wb_auto_init(&w);
	step(&w, true, 0, 100, &on);
	timed = step(&w, false, 0, 0, &on);
	ok(!timed && !on && w.phase == TP_WB_TRY_OFF,
	   "an iteration without a record during the trial starts it over");
	ok(trial(&w, 300, 200) && tp_wb_auto_on(&w) && w.off_ns == 300,
	   "and the trial then runs whole: off 300, on 200, kept on");

	tp_wb_auto_init(&w);
	tp_wb_auto_begin(&w, true);
	tp_wb_auto_timed(&w, 2000);
	tp_wb_auto_end(&w, 1000);	/* a clock that went back */
	ok(w.off_ns == 0 && w.phase == TP_WB_SETTLE_ON,
	   "a clock read before the start times the iteration 0, no wrap");
	return exit_status();
}
