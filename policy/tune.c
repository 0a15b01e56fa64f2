/* SPDX-License-Identifier: MIT */
/* policy.tune: time iterations under a few pairs, keep the fastest (see .h). */
#include "config.h"

#include "ctl/conf.h"
#include "policy/director.h"
#include "policy/tune.h"

/*
 * The baselines bench/budget-sweep compares the default with that run on
 * the chunked pool (Coop needs the contiguous one, chosen at start; LRU,
 * blind to size and cost, was never the fastest of them in its sweeps),
 * and the overlap filter with DELTA's own director.
 */
const struct tp_tune_pair tp_tune_pairs[] = {
	{ TP_FILTER_MSPS, TP_DIRECTOR_DELTA },
	{ TP_FILTER_DELTA, TP_DIRECTOR_DELTA },
	{ TP_FILTER_OVERLAP, TP_DIRECTOR_DELTA },
	{ TP_FILTER_DTR, TP_DIRECTOR_EVICT },
	{ TP_FILTER_GREEDY, TP_DIRECTOR_EVICT },
};
const unsigned tp_tune_nr_pairs = sizeof(tp_tune_pairs) /
				  sizeof(tp_tune_pairs[0]);

static bool same(struct tp_tune_pair a, struct tp_tune_pair b)
{
	return a.filter == b.filter && a.director == b.director;
}

/* Tune from the start: the keys' pair, timed. */
static void restart(struct tp_tune *tu)
{
	tu->phase = TP_TUNE_KEYS;
	tu->n = 0;
	tu->cand = -1;
	tu->kept = -1;
	tu->slow = 0;
	tu->aborted = false;
	tu->quiet = false;
	tu->restore = false;
}

void tp_tune_init(struct tp_tune *tu)
{
	*tu = (struct tp_tune){ .keys = { -1, -1 } };
	restart(tu);
}

/* Keep the fastest candidate where it beat the keys' pair by the margin. */
static void decide(struct tp_tune *tu)
{
	tu->phase = TP_TUNE_DONE;
	tu->since = 0;
	tu->cand = -1;
	tu->slow = 0;
	tu->kept = tu->best >= 0 &&
		   (double)tu->best_ns <
		   (1 - TP_TUNE_MARGIN) * (double)tu->keys_ns ? tu->best : -1;
	tu->restore_state = tu->kept >= 0 ? tu->best_state : tu->keys_state;
	tu->restore = true;
}

bool tp_tune_restore(struct tp_tune *tu, double *state)
{
	if (!tu->restore)
		return false;
	tu->restore = false;
	*state = tu->restore_state;
	return true;
}

/* The next candidate after tu->cand other than the keys' pair. */
static void next_candidate(struct tp_tune *tu)
{
	int c = tu->cand;

	while (++c < (int)tp_tune_nr_pairs &&
	       (same(tp_tune_pairs[c], tu->keys) ||
		(tu->keys_swapped &&
		 tp_director_traits(tp_tune_pairs[c].director)->evicts_only)))
		;
	tu->n = 0;
	if (c >= (int)tp_tune_nr_pairs) {
		decide(tu);
		return;
	}
	tu->cand = c;
	tu->phase = TP_TUNE_TRY;
}

bool tp_tune_begin(struct tp_tune *tu, bool on, struct tp_tune_pair keys,
		   uint64_t budget, uint64_t now)
{
	tu->timing = false;
	tu->aborted = false;
	tu->begin_ns = now;
	if (!on || !same(keys, tu->keys) || budget != tu->budget) {
		restart(tu);
		tu->keys = keys;
		tu->budget = budget;
		if (!on)
			return false;
	}
	tu->timing = tu->phase != TP_TUNE_DONE;
	return tu->timing;
}

void tp_tune_timed(struct tp_tune *tu, uint64_t now)
{
	tu->begin_ns = now;
}

/*
 * A kept candidate's iteration took @ns: two in a row slower than the
 * keys' pair was timed at, by the drift, and the next iteration tunes
 * again.
 */
static void watch(struct tp_tune *tu, uint64_t ns)
{
	if (tu->kept < 0)
		return;
	if ((double)ns > (1 + TP_TUNE_DRIFT) * (double)tu->keys_ns)
		tu->slow++;
	else
		tu->slow = 0;
	if (tu->slow >= 2)
		restart(tu);
}

/*
 * The pair on trial took @ns, its tu->n-th timed iteration: whether its
 * time is known, into *@mean: the mean of the TP_TUNE_SAMPLES after the
 * first @skip. A mean, not the least: an iteration that runs long now
 * and then costs the run as much as any.
 */
static bool sampled(struct tp_tune *tu, uint64_t ns, unsigned skip,
		    uint64_t *mean)
{
	if (tu->n <= skip)
		return false;
	if (tu->n == skip + 1)
		tu->sum_ns = 0;
	tu->sum_ns += ns;
	if (tu->n < skip + TP_TUNE_SAMPLES)
		return false;
	*mean = tu->sum_ns / TP_TUNE_SAMPLES;
	return true;
}

void tp_tune_end(struct tp_tune *tu, uint64_t now, bool paged, bool swapped,
		 double state)
{
	uint64_t ns = now > tu->begin_ns ? now - tu->begin_ns : 0, mean;
	bool timed = tu->timing;

	tu->timing = false;
	tu->quiet = !paged;
	switch (tu->phase) {
	case TP_TUNE_KEYS:
		/* Nothing paged: every pair runs it alike. */
		if (!paged || !timed) {
			tu->n = 0;
			break;
		}
		tu->n++;
		if (tu->n == 1)
			tu->keys_swapped = false;
		tu->keys_swapped |= swapped;
		if (!sampled(tu, ns, TP_TUNE_WARM, &tu->keys_ns))
			break;
		tu->keys_state = state;
		tu->best = -1;
		tu->best_ns = UINT64_MAX;
		tu->cand = -1;
		next_candidate(tu);
		break;
	case TP_TUNE_TRY:
		if (tu->aborted) {
			tu->trials++;
			next_candidate(tu);
			break;
		}
		if (!timed)
			break;
		tu->n++;
		if (!sampled(tu, ns, 1, &mean))
			break;
		tu->trials++;
		if (mean < tu->best_ns) {
			tu->best_ns = mean;
			tu->best = tu->cand;
			tu->best_state = state;
		}
		next_candidate(tu);
		break;
	case TP_TUNE_DONE:
		if (tu->since < UINT32_MAX)
			tu->since++;
		watch(tu, ns);
		break;
	}
	tu->aborted = false;
}

bool tp_tune_over(struct tp_tune *tu, uint64_t now)
{
	/* A pair's first iteration starts from another's state. */
	double most = (tu->n ? TP_TUNE_ABORT : TP_TUNE_ABORT_FIRST) *
		      (double)tu->keys_ns;

	if (tu->aborted || tu->phase != TP_TUNE_TRY || now < tu->begin_ns ||
	    (double)(now - tu->begin_ns) <= most)
		return false;
	tu->aborted = true;
	return true;
}
