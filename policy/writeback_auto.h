/* SPDX-License-Identifier: MIT */
/*
 * policy.writeback = auto: whether copies ahead of need pay is measured,
 * not guessed. A training step repeats, so the policy times one predicted
 * iteration without writeback and, after one to settle, one with it, and
 * keeps the faster (ties: without). It measures again every
 * TP_WB_AUTO_RETRY iterations, so that a run whose steps change is not
 * held to its first answer.
 *
 * Whether writeback pays depends on how often a demand's copy out must
 * wait behind one: with room to spare it hides offloads that would
 * otherwise be recomputed or waited for; at a budget where every
 * allocation frees something, its copies delay those demands instead
 * (measured on DTR's ResNet-32 log: 1.042 against 1.053 at ratio 0.7,
 * 1.96 against 1.25 at 0.2). No count of queued bytes predicts which.
 */
#ifndef TP_POLICY_WRITEBACK_AUTO_H
#define TP_POLICY_WRITEBACK_AUTO_H

#include <stdbool.h>
#include <stdint.h>

#define TP_WB_AUTO_RETRY	1000	/* iterations between two trials */

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
	uint64_t trials;	/* decisions taken */
};

void tp_wb_auto_init(struct tp_wb_auto *w);

/**
 * tp_wb_auto_begin() - an iteration begins. @predicted: the prefetcher
 * has a record to run it by (only then is a writeback possible at all).
 * Returns whether it is to be timed: the caller then waits for the work
 * issued so far and passes the clock to tp_wb_auto_timed().
 */
bool tp_wb_auto_begin(struct tp_wb_auto *w, bool predicted);
void tp_wb_auto_timed(struct tp_wb_auto *w, uint64_t now);

/**
 * tp_wb_auto_timing() - whether the iteration under way is timed: the
 * caller then waits for its work at its end and passes the clock to
 * tp_wb_auto_end().
 */
bool tp_wb_auto_timing(const struct tp_wb_auto *w);
void tp_wb_auto_end(struct tp_wb_auto *w, uint64_t now);

/* Whether the iteration under way copies ahead of need. */
static inline bool tp_wb_auto_on(const struct tp_wb_auto *w)
{
	return w->on;
}

#endif /* TP_POLICY_WRITEBACK_AUTO_H */
