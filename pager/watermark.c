/* SPDX-License-Identifier: MIT */
/* High/low watermark hysteresis for proactive release (DELTA §4.3). */
#include "config.h"

#include "pager/watermark.h"

uint64_t tp_watermark_release(struct tp_watermark *wm, double high_pct,
			      double low_pct, uint64_t used, uint64_t budget)
{
	double high = (double)budget * high_pct / 100;
	double low = (double)budget * (low_pct < high_pct ? low_pct : high_pct) / 100;

	if ((double)used > high)
		wm->releasing = true;
	if (!wm->releasing)
		return 0;
	if ((double)used <= low) {
		wm->releasing = false;
		return 0;
	}
	return used - (uint64_t)low;
}
