/* SPDX-License-Identifier: MIT */
/*
 * policy.writeback = auto's trial: which iterations are timed and with
 * which setting, the decision from their times (ties to off), a trial
 * started over when an iteration has no record; and the gate reopening:
 * the trial taken again TP_WB_AUTO_FIRST iterations after a decision,
 * the wait doubling while the answer stays, back to the first when it
 * changes, and at once when decided iterations run slower than the
 * setting turned down (two in a row).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "policy/writeback_auto.h"
#include "tap.h"

/*
 * One iteration from @t0 to @t1: timed when asked (begin then passes @t0
 * again as the settled clock), else the clock as it reads.
 */
static bool step(struct tp_wb_auto *w, bool predicted, uint64_t t0,
		 uint64_t t1, bool *on)
{
	bool timed = tp_wb_auto_begin(w, predicted, t0);

	if (timed)
		tp_wb_auto_timed(w, t0);
	*on = tp_wb_auto_on(w);
	if (timed != tp_wb_auto_timing(w))
		return !timed;	/* a mismatch reads as the opposite */
	tp_wb_auto_end(w, t1);
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

/* @n decided iterations of @ns each: all untimed, with setting @want. */
static bool decided(struct tp_wb_auto *w, unsigned n, uint64_t ns,
		    bool want)
{
	bool on, all = true;

	for (unsigned i = 0; i < n; i++) {
		all &= !step(w, true, 100000 * i, 100000 * i + ns, &on);
		all &= on == want && w->phase == TP_WB_DECIDED;
	}
	return all;
}

int main(void)
{
	struct tp_wb_auto w;
	bool on, timed;

	plan_tests(14);

	tp_wb_auto_init(&w);
	timed = step(&w, false, 0, 0, &on);
	ok(!timed && !on && w.phase == TP_WB_TRY_OFF,
	   "without a record: untimed, off, the trial waits");

	ok(trial(&w, 1000, 900) && tp_wb_auto_on(&w) && w.off_ns == 1000 &&
	   w.on_ns == 900 && w.trials == 1,
	   "off timed, on settled then timed; on ran faster: kept on");

	ok(decided(&w, TP_WB_AUTO_FIRST - 1, 900, true),
	   "decided: %u iterations untimed and on", TP_WB_AUTO_FIRST - 1);
	timed = step(&w, true, 0, 700, &on);
	ok(timed && !on && w.phase == TP_WB_SETTLE_ON && w.off_ns == 700,
	   "the %u-th iteration after the first decision tries again, off",
	   TP_WB_AUTO_FIRST);
	timed = step(&w, true, 0, 0, &on);
	timed |= step(&w, true, 0, 650, &on);
	ok(timed && w.phase == TP_WB_DECIDED && tp_wb_auto_on(&w) &&
	   w.trials == 2 && w.wait == 2 * TP_WB_AUTO_FIRST,
	   "the same answer (on, 650 against 700): trusted twice as long");

	ok(decided(&w, 2 * TP_WB_AUTO_FIRST - 1, 650, true) &&
	   step(&w, true, 0, 600, &on) && !on,
	   "and tried again %u iterations later", 2 * TP_WB_AUTO_FIRST);
	step(&w, true, 0, 0, &on);
	step(&w, true, 0, 800, &on);
	ok(w.phase == TP_WB_DECIDED && !tp_wb_auto_on(&w) && w.trials == 3 &&
	   w.wait == TP_WB_AUTO_FIRST,
	   "on now slower (800 against 600): dropped, the schedule starts over");

	/* Off decided at 600 against on's 800: off iterations get slow. */
	ok(decided(&w, 1, 850, false) && w.slow == 0,
	   "a decided iteration within %.0f%% of the loser's time is no drift",
	   100 * TP_WB_AUTO_DRIFT);
	decided(&w, 2, 1000, false);
	ok(w.reopened == 1, "two in a row slower than on was timed at reopen the gate");
	timed = step(&w, true, 0, 1000, &on);
	ok(timed && !on && w.phase == TP_WB_SETTLE_ON,
	   "at the next iteration, with a new trial");

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
	tp_wb_auto_begin(&w, true, 2000);
	tp_wb_auto_timed(&w, 2000);
	tp_wb_auto_end(&w, 1000);	/* a clock that went back */
	ok(w.off_ns == 0 && w.phase == TP_WB_SETTLE_ON,
	   "a clock read before the start times the iteration 0, no wrap");
	return exit_status();
}
