/* SPDX-License-Identifier: MIT */
/* policy.writeback = auto: time an iteration without and one with (see .h). */
#include "config.h"

#include "policy/writeback_auto.h"

void tp_wb_auto_init(struct tp_wb_auto *w)
{
	*w = (struct tp_wb_auto){ .phase = TP_WB_TRY_OFF,
				  .wait = TP_WB_AUTO_FIRST };
}

/* Start the trial over (its first iteration is the one beginning). */
static void retry(struct tp_wb_auto *w)
{
	w->phase = TP_WB_TRY_OFF;
	w->slow = 0;
	w->have_begin = false;
}

bool tp_wb_auto_begin(struct tp_wb_auto *w, bool predicted, uint64_t now)
{
	w->timing = false;
	if (w->phase == TP_WB_DECIDED) {
		if (++w->since >= w->wait)
			retry(w);
		else {
			w->last_begin = now;
			w->have_begin = predicted;
		}
	}
	/* Without a record nothing is copied ahead: a trial starts over. */
	if (w->phase == TP_WB_DECIDED)
		return false;
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

/* A trial's answer: the faster setting, ties to the one that moves nothing. */
static void decide(struct tp_wb_auto *w)
{
	bool on = w->on_ns < w->off_ns;

	/* The same answer again: trust it longer. */
	if (w->trials && on == w->last)
		w->wait = w->wait * 2 < TP_WB_AUTO_RETRY ? w->wait * 2 :
							    TP_WB_AUTO_RETRY;
	else
		w->wait = TP_WB_AUTO_FIRST;
	w->on = on;
	w->last = on;
	w->phase = TP_WB_DECIDED;
	w->since = 0;
	w->slow = 0;
	w->have_begin = false;
	w->trials++;
}

/*
 * A decided iteration took @ns: two in a row slower than the setting
 * the decision turned down reopen the trial at the next iteration.
 */
static void watch(struct tp_wb_auto *w, uint64_t ns)
{
	uint64_t loser = w->on ? w->off_ns : w->on_ns;

	if ((double)ns > (1 + TP_WB_AUTO_DRIFT) * (double)loser)
		w->slow++;
	else
		w->slow = 0;
	if (w->slow >= 2) {
		w->since = w->wait;	/* the next begin retries */
		w->reopened++;
	}
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
			decide(w);
		}
		break;
	case TP_WB_DECIDED:
		if (w->have_begin)
			watch(w, now > w->last_begin ? now - w->last_begin : 0);
		w->have_begin = false;
		break;
	}
}
