/* SPDX-License-Identifier: MIT */
/*
 * policy.tune: which filter and director a run keeps is measured on the
 * run, not guessed. No one pair is best at every budget and on every
 * program: on the sim's H200 profile the default (overlap/delta-overlap)
 * was 5-9% behind MSPS's or GREEDY's on VGG-16's trace at 40% and 30% of
 * its peak and on DTR's Transformer log at 20%. A training step repeats,
 * so, as policy.writeback = auto does for one setting, the policy times
 * iterations under each of a few pairs and keeps the fastest:
 *
 * - the keys' pair: TP_TUNE_WARM iterations that page, then the mean of
 *   TP_TUNE_SAMPLES (the first has no record for the prefetcher to run
 *   by, and those that grow host swap pay to pin it);
 * - each candidate (tp_tune_pairs) other than the keys' pair (not those
 *   that never use host swap where the keys' pair used it: an evict-only
 *   pair then leaves regenerations that no room holds, and a demand
 *   fails that the keys' pair, switched back to, cannot save): one
 *   iteration to settle (it starts from what the pair before left
 *   resident, and the prefetcher's record is of that pair), then the
 *   mean of as many;
 * - a candidate is kept only where its mean is below the keys' pair's by
 *   TP_TUNE_MARGIN: ties and noise keep what the user configured.
 *
 * A trial's iteration costs at most TP_TUNE_ABORT times the keys' (its
 * first, TP_TUNE_ABORT_FIRST times): past it, the rest of the iteration
 * runs under the keys' pair again and the candidate is out (checked at
 * each victim choice, where a pair that thrashes spends its time). So
 * does a demand the pair finds no victim for where the keys' pair finds
 * one (victim.c), and a public call that fails for room under a trial
 * ends it and is made again (tp_ctx_retry()). Timed iterations wait for
 * the work issued before they begin and end, so that they measure their
 * own.
 *
 * The answer is not kept for good. A budget changed or the keys changed
 * start the tuning over, and a kept candidate whose iterations run slower
 * than the keys' pair was timed at, by TP_TUNE_DRIFT, two in a row (a
 * phase of training with other shapes) does too. An iteration that pages
 * nothing is not tuned for: every pair runs it alike.
 */
#ifndef TP_POLICY_TUNE_H
#define TP_POLICY_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#define TP_TUNE_WARM	2	/* the keys' iterations before the samples */
#define TP_TUNE_SAMPLES	3	/* iterations a pair's mean is taken over */
#define TP_TUNE_MARGIN	0.02	/* a candidate must be this much faster */
#define TP_TUNE_ABORT	1.5	/* a trial past this times the keys' ends */
#define TP_TUNE_ABORT_FIRST 2.0	/* ... its first iteration, this */
#define TP_TUNE_SETTLE	2	/* iterations the pair kept runs to settle */
#define TP_TUNE_DRIFT	0.10	/* a kept pair this much slower: retune */

/* A filter and a director (ctl/conf.h's kinds). */
struct tp_tune_pair {
	int filter, director;
};

/* The candidates, in the order they are tried. */
extern const struct tp_tune_pair tp_tune_pairs[];
extern const unsigned tp_tune_nr_pairs;

enum tp_tune_phase {
	TP_TUNE_KEYS,		/* the keys' pair, timed */
	TP_TUNE_TRY,		/* a candidate, timed */
	TP_TUNE_DONE,
};

struct tp_tune {
	enum tp_tune_phase phase;
	unsigned n;		/* paging iterations timed in the phase */
	uint64_t sum_ns;	/* of the samples so far */
	int cand;		/* the candidate on trial */
	int kept;		/* the candidate kept, -1: the keys' pair */
	bool aborted;		/* the trial went past TP_TUNE_ABORT */
	bool timing;		/* the iteration under way is timed */
	uint64_t begin_ns;	/* its start: waited for where timed */
	uint64_t keys_ns;	/* the keys' pair's mean iteration */
	bool keys_swapped;	/* it sent a victim to host swap */
	uint64_t best_ns;	/* the fastest candidate's, and which */
	int best;
	unsigned slow;		/* kept iterations in a row past the drift */
	bool quiet;		/* the last iteration paged nothing */
	/*
	 * The policy's own state after each pair's last timed iteration
	 * (what it learnt of how much prefetching hides), handed back when
	 * that pair is kept: it was timed in that state, and the state
	 * another pair's trials leave it may keep it slower (BERT's trace
	 * at 14%: 98.5 ms an iteration after the trials, 91.4 before).
	 */
	double keys_state, best_state, restore_state;
	bool restore;		/* tp_tune_restore() has one to hand back */
	uint32_t since;		/* iterations since the decision */
	/* What the trials were for: the keys' pair and the budget. */
	struct tp_tune_pair keys;
	uint64_t budget;
	uint64_t trials;	/* candidates timed (or ended) so far */
};

void tp_tune_init(struct tp_tune *tu);

/**
 * tp_tune_begin() - an iteration begins at @now (the clock as it reads)
 * under keys @keys and budget @budget; @on: policy.tune in force. Returns
 * whether it is timed: the caller then waits for the work issued so far
 * and passes the clock to tp_tune_timed().
 */
bool tp_tune_begin(struct tp_tune *tu, bool on, struct tp_tune_pair keys,
		   uint64_t budget, uint64_t now);
void tp_tune_timed(struct tp_tune *tu, uint64_t now);

/* Whether the iteration under way is timed (see tp_tune_end()). */
static inline bool tp_tune_timing(const struct tp_tune *tu)
{
	return tu->timing;
}

/**
 * tp_tune_end() - the iteration under way ends at @now: waited for
 * where tp_tune_timing() said so, else the clock as it reads. @paged:
 * the policy chose a victim in it; @swapped: one it sent to host swap;
 * @state: the policy's state to hand back should this pair be kept.
 */
void tp_tune_end(struct tp_tune *tu, uint64_t now, bool paged, bool swapped,
		 double state);

/*
 * tp_tune_restore() - once a pair is kept: true, once, with the state
 * the policy had after that pair's last timed iteration in *@state (the
 * @state given to tp_tune_end() then), to take back.
 */
bool tp_tune_restore(struct tp_tune *tu, double *state);

/**
 * tp_tune_over() - at @now, whether a trial just went past its bound
 * (TP_TUNE_ABORT, TP_TUNE_ABORT_FIRST): the keys' pair is in force again
 * from here.
 */
bool tp_tune_over(struct tp_tune *tu, uint64_t now);

/*
 * Whether the tuning is under way: pairs timed, or the one kept not yet
 * TP_TUNE_SETTLE iterations in (the one after the last trial starts from
 * that trial's state and the prefetcher's record of it), or no iteration
 * ended yet. Not once an iteration paged nothing.
 */
static inline bool tp_tune_pending(const struct tp_tune *tu)
{
	if (tu->phase == TP_TUNE_DONE)
		return tu->since < TP_TUNE_SETTLE;
	return !(tu->phase == TP_TUNE_KEYS && tu->quiet);
}

/* Whether a candidate is in force, on trial. */
static inline bool tp_tune_on_trial(const struct tp_tune *tu)
{
	return tu->phase == TP_TUNE_TRY && !tu->aborted;
}

/*
 * tp_tune_stop() - the trial under way ends: the keys' pair from here to
 * the iteration's end, the candidate out; tp_tune_resume() takes that
 * back, where the keys' pair did no better.
 */
static inline void tp_tune_stop(struct tp_tune *tu)
{
	tu->aborted = true;
}

static inline void tp_tune_resume(struct tp_tune *tu)
{
	tu->aborted = false;
}

/*
 * The pair in force: a candidate on trial or kept, else NULL (the keys').
 * Inline: the policy asks on every decision.
 */
static inline const struct tp_tune_pair *tp_tune_pair(const struct tp_tune *tu)
{
	if (tu->aborted)
		return NULL;
	if (tu->phase == TP_TUNE_TRY)
		return &tp_tune_pairs[tu->cand];
	if (tu->phase == TP_TUNE_DONE && tu->kept >= 0)
		return &tp_tune_pairs[tu->kept];
	return NULL;
}

#endif /* TP_POLICY_TUNE_H */
