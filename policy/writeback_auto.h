/* SPDX-License-Identifier: MIT */
/*
 * policy.writeback = auto: whether copies ahead of need pay is measured,
 * not guessed. A training step repeats, so the policy times one predicted
 * iteration without writeback and, after one to settle, one with it, and
 * keeps the faster (ties: without).
 *
 * Whether writeback pays depends on how often a demand's copy out must
 * wait behind one: with room to spare it hides offloads that would
 * otherwise be recomputed or waited for; at a budget where every
 * allocation frees something, its copies delay those demands instead
 * (measured on DTR's ResNet-32 log: 1.042 against 1.053 at ratio 0.7,
 * 1.96 against 1.25 at 0.2). No count of queued bytes predicts which.
 *
 * The answer is not kept for good: a run whose steps change (a budget
 * changed at run time, a phase of training with other shapes) would be
 * held to it. The gate reopens
 *
 * - on a schedule: the trial is taken again TP_WB_AUTO_FIRST iterations
 *   after a decision, and each time the same answer comes back the wait
 *   doubles, up to TP_WB_AUTO_RETRY; an answer that changes starts the
 *   schedule over;
 *
 * - at once when the iterations run under the decision get slower than
 *   the setting it turned down was timed at, by TP_WB_AUTO_DRIFT, two in
 *   a row: what was measured no longer holds. These iterations are timed
 *   on the clock as it reads (no wait for the device): in a steady loop
 *   the host runs the same distance ahead at every boundary.
 */
#ifndef TP_POLICY_WRITEBACK_AUTO_H
#define TP_POLICY_WRITEBACK_AUTO_H

#include <stdbool.h>
#include <stdint.h>

#define TP_WB_AUTO_FIRST	8	/* iterations to the first retrial */
#define TP_WB_AUTO_RETRY	1024	/* most iterations between trials */
#define TP_WB_AUTO_DRIFT	0.10	/* slower than the loser by this */

enum tp_wb_phase {
	TP_WB_TRY_OFF,		/* a predicted iteration timed without */
	TP_WB_SETTLE_ON,	/* with, untimed: the cache fills */
	TP_WB_TRY_ON,		/* with, timed */
	TP_WB_DECIDED,
};

struct tp_wb_auto {
	enum tp_wb_phase phase;
	bool on;		/* the setting the iteration under way runs */
	bool timing;		/* it is timed: began at begin_ns */
	uint64_t begin_ns;
	uint64_t off_ns, on_ns;	/* the trial iterations' times */
	uint64_t since;		/* iterations since the decision */
	uint64_t wait;		/* iterations from the decision to the next
				 * trial */
	uint64_t trials;	/* decisions taken */
	bool last;		/* the last decision's setting */
	uint64_t reopened;	/* trials started early by a drift */
	unsigned slow;		/* decided iterations in a row slower than
				 * the setting turned down */
	uint64_t last_begin;	/* the decided iteration's start, as read */
	bool have_begin;
};

void tp_wb_auto_init(struct tp_wb_auto *w);

/**
 * tp_wb_auto_begin() - an iteration begins at @now (the clock as it
 * reads). @predicted: the prefetcher has a record to run it by (only
 * then is a writeback possible at all). Returns whether it is to be
 * timed: the caller then waits for the work issued so far and passes the
 * clock to tp_wb_auto_timed().
 */
bool tp_wb_auto_begin(struct tp_wb_auto *w, bool predicted, uint64_t now);
void tp_wb_auto_timed(struct tp_wb_auto *w, uint64_t now);

/**
 * tp_wb_auto_timing() - whether the iteration under way is timed: the
 * caller then waits for its work at its end and passes the clock to
 * tp_wb_auto_end(); else it passes the clock as it reads.
 */
bool tp_wb_auto_timing(const struct tp_wb_auto *w);
void tp_wb_auto_end(struct tp_wb_auto *w, uint64_t now);

/* Whether the iteration under way copies ahead of need. */
static inline bool tp_wb_auto_on(const struct tp_wb_auto *w)
{
	return w->on;
}

#endif /* TP_POLICY_WRITEBACK_AUTO_H */
