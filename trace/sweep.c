/* SPDX-License-Identifier: MIT */
/*
 * Coop's minimum budget (Coop §4.2's metric) found over replays: coarse
 * steps first, then 1 %, then halving, so that policies that meet at a
 * 5 % step are told apart to 0.1 % without forty times the runs.
 */
#include <stdio.h>

#include "trace/sweep.h"

uint64_t tp_sweep_bytes(uint64_t peak, int tenths)
{
	return (uint64_t)((double)peak * tenths / 1000.0);
}

const char *tp_sweep_text(int tenths, char *buf, size_t len)
{
	if (tenths % 10)
		snprintf(buf, len, "%d.%d%%", tenths / 10, tenths % 10);
	else
		snprintf(buf, len, "%d%%", tenths / 10);
	return buf;
}

/*
 * Budgets from @from down to above @to in steps of @step, while they
 * fit: each that does becomes *@min. Into *@fail the first that did not
 * (left as it was when none failed, or a budget fell under @least).
 */
static int down(uint64_t peak, uint64_t least, int from, int to, int step,
		int (*run)(void *, int), void *priv, int *min, int *fail)
{
	for (int p = from; p > to && p > 0; p -= step) {
		int fits;

		if (tp_sweep_bytes(peak, p) < least)
			break;
		fits = run(priv, p);
		if (fits < 0)
			return fits;
		if (!fits) {
			*fail = p;
			break;
		}
		*min = p;
	}
	return 0;
}

int tp_sweep(uint64_t peak, uint64_t least,
	     int (*run)(void *priv, int tenths), void *priv, int *min)
{
	int fail = 0, ret;

	*min = -1;
	ret = down(peak, least, 1000, 0, TP_SWEEP_STEP, run, priv, min, &fail);
	for (int p = 1000 + TP_SWEEP_STEP; !ret && *min < 0 &&
	     p <= TP_SWEEP_MAX; p += TP_SWEEP_STEP) {
		if (tp_sweep_bytes(peak, p) < least)
			continue;
		ret = run(priv, p);
		if (ret > 0)
			*min = p;
		ret = ret < 0 ? ret : 0;
	}
	if (ret || *min < 0)
		return ret;
	if (*min > 1000)
		fail = *min - TP_SWEEP_STEP;	/* going up, the step below failed */
	ret = down(peak, least, *min - TP_SWEEP_FINE, *min - TP_SWEEP_STEP,
		   TP_SWEEP_FINE, run, priv, min, &fail);
	/* Between the last that fit and the first that did not, by halves. */
	while (!ret && fail && *min - fail > 1) {
		int p = (fail + *min) / 2;

		ret = run(priv, p);
		if (ret > 0)
			*min = p;
		else if (!ret)
			fail = p;
		ret = ret < 0 ? ret : 0;
	}
	return ret;
}
