/* SPDX-License-Identifier: MIT */
/*
 * Watermarks: proactive release starts when use crosses
 * pager.high_watermark (DELTA §4.3: 3/4 of the budget, so copies start
 * before an allocation blocks) and goes on until use falls under
 * pager.low_watermark (hysteresis, so it does not start and stop on every
 * allocation).
 *
 * The rule is the pager's, which owns the budget: its own release when no
 * policy says how much (tp_pager_watermark()), and the policy's release
 * hook, use it alike.
 */
#ifndef TP_PAGER_WATERMARK_H
#define TP_PAGER_WATERMARK_H

#include <stdbool.h>
#include <stdint.h>

struct tp_watermark {
	bool releasing;
};

/**
 * tp_watermark_release() - bytes to release now, given @used of @budget
 * and the watermarks in percent. 0 when under the high watermark and not
 * already releasing, or once under the low one. A low watermark above the
 * high one is taken as equal to it.
 */
uint64_t tp_watermark_release(struct tp_watermark *wm, double high_pct,
			      double low_pct, uint64_t used, uint64_t budget);

#endif /* TP_PAGER_WATERMARK_H */
