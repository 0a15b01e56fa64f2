/* SPDX-License-Identifier: MIT */
/*
 * tp_sweep(), the minimum-budget search of tpager-sim --sweep and
 * policy-table, against runs that fit from a known threshold: it finds
 * the threshold to 0.1 %, going down or up, in the runs it promises,
 * never runs under the least budget, and stops on a run's error.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "tests/tap.h"
#include "trace/sweep.h"

struct fake {
	int from;		/* fits at and above, in tenths */
	int fail_at;		/* this run returns -EIO; 0: none */
	int runs, lowest;
};

static int run(void *priv, int tenths)
{
	struct fake *f = priv;

	f->runs++;
	if (tenths < f->lowest)
		f->lowest = tenths;
	if (tenths == f->fail_at)
		return -EIO;
	return tenths >= f->from;
}

static int sweep(struct fake *f, uint64_t peak, uint64_t least, int *min)
{
	f->runs = 0;
	f->lowest = 1 << 30;
	return tp_sweep(peak, least, run, f, min);
}

int main(void)
{
	struct fake f = { 0 };
	char buf[16];
	int min, rc;

	plan_tests(9);

	f.from = 213;
	rc = sweep(&f, 1000000, 1, &min);
	/* 5 % steps from 100 % to 20 % (fails), 17 runs; 1 % steps 24 to
	 * 21 % (fails), 4; halves 21.5, 21.2 (fails), 21.3, 3. */
	ok(!rc && min == 213, "a threshold at 21.3%%: found (%d)", min);
	ok(f.runs == 17 + 4 + 3, "in %d runs: the 5%% and 1%% steps and three halves",
	   f.runs);

	f.from = 1253;
	rc = sweep(&f, 1000000, 1, &min);
	ok(!rc && min == 1253, "above the peak (a fragmenting pool): up to 130%%, down to 125.3%% (%d)",
	   min);

	f.from = 2100;
	rc = sweep(&f, 1000000, 1, &min);
	ok(!rc && min == -1, "nothing fits up to 200%%: -1");

	f.from = 0;
	rc = sweep(&f, 1000000, 120000, &min);
	ok(!rc && min == 120 && f.lowest >= 120,
	   "a least budget of 12%%: nothing under it runs, the minimum is the last 1%% step at it (%d, lowest run %d)",
	   min, f.lowest);

	f.from = 213;
	f.fail_at = 220;
	rc = sweep(&f, 1000000, 1, &min);
	ok(rc == -EIO, "a run's error stops the sweep and is returned");
	f.fail_at = 0;

	ok(tp_sweep_bytes(1000, 765) == 765 && tp_sweep_bytes(23361024228ull, 750) ==
	   (uint64_t)(23361024228.0 * 75 / 100.0),
	   "budget bytes at tenths of a percent: the same as at whole percents");
	ok(!strcmp(tp_sweep_text(770, buf, sizeof(buf)), "77%"), "77%% as text");
	ok(!strcmp(tp_sweep_text(709, buf, sizeof(buf)), "70.9%"), "70.9%% as text");
	return exit_status();
}
