/* SPDX-License-Identifier: MIT */
/* policy.writeback = auto: time an iteration without and one with (see .h). */
#include "config.h"

#include "policy/writeback_auto.h"

void tp_wb_auto_init(struct tp_wb_auto *w)
{
	*w = (struct tp_wb_auto){ .phase = TP_WB_TRY_OFF };
}

bool tp_wb_auto_begin(struct tp_wb_auto *w, bool predicted)
{
	w->timing = false;
	if (w->phase == TP_WB_DECIDED) {
		if (++w->since < TP_WB_AUTO_RETRY)
			return false;
		w->phase = TP_WB_TRY_OFF;
	}
	/* Without a record nothing is copied ahead: a trial starts over. */
	if (!predicted) {
		w->phase = TP_WB_TRY_OFF;
		w->on = false;
		return false;
	}
	w->on = w->phase != TP_WB_TRY_OFF;
	w->timing = w->phase != TP_WB_SETTLE_ON;
	return w->timing;
}

void tp_wb_auto_timed(struct tp_wb_auto *w, uint64_t now)
{
	w->begin_ns = now;
}

bool tp_wb_auto_timing(const struct tp_wb_auto *w)
{
	return w->timing;
}

void tp_wb_auto_end(struct tp_wb_auto *w, uint64_t now)
{
	uint64_t ns = now > w->begin_ns ? now - w->begin_ns : 0;
	bool timed = w->timing;

	w->timing = false;
	switch (w->phase) {
	case TP_WB_TRY_OFF:
		if (timed) {
			w->off_ns = ns;
			w->phase = TP_WB_SETTLE_ON;
		}
		break;
	case TP_WB_SETTLE_ON:
		w->phase = TP_WB_TRY_ON;
		break;
	case TP_WB_TRY_ON:
		if (timed) {
			w->on_ns = ns;
			/* Ties go to the setting that moves nothing. */
			w->on = w->on_ns < w->off_ns;
			w->phase = TP_WB_DECIDED;
			w->since = 0;
			w->trials++;
		}
		break;
	case TP_WB_DECIDED:
		break;
	}
}
