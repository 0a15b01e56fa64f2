// SPDX-License-Identifier: MIT
/*
 * policy.tune's trials (policy/tune.c) on iteration times given here: the
 * keys' pair's mean after its warm-up, each candidate's after one to
 * settle, the fastest kept only past the margin, a trial ended past its
 * bound, evict-only pairs left out where the keys' pair used host swap,
 * and the tuning started over by a new budget or pair in the keys and by
 * a kept pair that drifts slower.
 */
#include "config.h"

#include "ctl/conf.h"
#include "policy/director.h"
#include "policy/tune.h"
#include "tests/tap.h"

#define MS	1000000ull

static const struct tp_tune_pair keys = {
	TP_FILTER_OVERLAP, TP_DIRECTOR_DELTA_OVERLAP,
};

struct run {
	struct tp_tune tu;
	uint64_t now;
	unsigned iterations;
};

/* One iteration of @ms under whatever is in force; the pair it ran. */
static const struct tp_tune_pair *iterate(struct run *r, uint64_t budget,
					  double ms, bool paged, bool swapped)
{
	const struct tp_tune_pair *p;

	if (tp_tune_begin(&r->tu, true, keys, budget, r->now))
		tp_tune_timed(&r->tu, r->now);
	p = tp_tune_pair(&r->tu);
	r->now += (uint64_t)(ms * MS);
	tp_tune_end(&r->tu, r->now, paged, swapped, 0);
	r->iterations++;
	return p;
}

/* The candidate index of @p, -1 for the keys' pair (NULL). */
static int index_of(const struct tp_tune_pair *p)
{
	return p ? (int)(p - tp_tune_pairs) : -1;
}

/*
 * Run until the tuning is done, each pair's iterations taking @ms[c + 1]
 * (@ms[0]: the keys' pair's), none swapping unless @swapped.
 */
static void tune_to_end(struct run *r, const double *ms, bool swapped)
{
	for (unsigned i = 0; i < 200 && tp_tune_pending(&r->tu); i++) {
		int c = index_of(tp_tune_pair(&r->tu));

		iterate(r, 1 << 30, ms[c + 1], true, swapped && c < 0);
	}
}

static unsigned evict_only_pairs(void)
{
	unsigned n = 0;

	for (unsigned c = 0; c < tp_tune_nr_pairs; c++)
		n += tp_director_traits(tp_tune_pairs[c].director)->evicts_only;
	return n;
}

int main(void)
{
	double ms[16];
	struct run r = { 0 };
	unsigned c, fastest = 1;

	plan_tests(13);

	/* Every candidate slower but one, 10% faster than the keys'. */
	tp_tune_init(&r.tu);
	ms[0] = 100;
	for (c = 0; c < tp_tune_nr_pairs; c++)
		ms[c + 1] = c == fastest ? 90 : 120;
	tune_to_end(&r, ms, false);
	ok(!tp_tune_pending(&r.tu) && index_of(tp_tune_pair(&r.tu)) ==
	   (int)fastest && r.tu.trials == tp_tune_nr_pairs,
	   "the fastest candidate kept after %u iterations, %u timed",
	   r.iterations, (unsigned)r.tu.trials);
	ok(r.iterations == TP_TUNE_WARM + TP_TUNE_SAMPLES +
	   tp_tune_nr_pairs * (1 + TP_TUNE_SAMPLES) + TP_TUNE_SETTLE,
	   "keys: %u warm + %u samples; each candidate 1 + %u; %u to settle",
	   TP_TUNE_WARM, TP_TUNE_SAMPLES, TP_TUNE_SAMPLES, TP_TUNE_SETTLE);
	/* It stays: the same budget and keys, times as measured. */
	for (c = 0; c < 10; c++)
		iterate(&r, 1 << 30, 90, true, false);
	ok(index_of(tp_tune_pair(&r.tu)) == (int)fastest,
	   "the kept pair stays while it keeps its time");

	/* Slower by more than the drift, twice: tuned again. */
	iterate(&r, 1 << 30, 125, true, false);
	ok(index_of(tp_tune_pair(&r.tu)) == (int)fastest,
	   "one slow iteration changes nothing");
	iterate(&r, 1 << 30, 125, true, false);
	ok(tp_tune_pending(&r.tu) && !tp_tune_pair(&r.tu),
	   "two in a row start over with the keys' pair");

	/* Within the margin: the keys' pair stays. */
	tp_tune_init(&r.tu);
	for (c = 0; c < tp_tune_nr_pairs; c++)
		ms[c + 1] = 100 * (1 - TP_TUNE_MARGIN / 2);
	tune_to_end(&r, ms, false);
	ok(!tp_tune_pending(&r.tu) && !tp_tune_pair(&r.tu),
	   "candidates within %.0f%% leave the keys' pair in force",
	   100 * TP_TUNE_MARGIN);

	/* A budget changed: over again, and so a pair in the keys. */
	tp_tune_begin(&r.tu, true, keys, 1 << 29, r.now);
	ok(r.tu.phase == TP_TUNE_KEYS && tp_tune_pending(&r.tu),
	   "a new budget starts the tuning over");
	tp_tune_init(&r.tu);
	tp_tune_begin(&r.tu, false, keys, 1 << 30, r.now);
	ok(!tp_tune_timing(&r.tu) && !tp_tune_pair(&r.tu),
	   "off: nothing timed, the keys' pair");

	/* A trial past its bound ends under the keys' pair, and is out. */
	tp_tune_init(&r.tu);
	for (c = 0; c < tp_tune_nr_pairs; c++)
		ms[c + 1] = 95;
	while (index_of(tp_tune_pair(&r.tu)) < 0)
		iterate(&r, 1 << 30, 100, true, false);
	tp_tune_begin(&r.tu, true, keys, 1 << 30, r.now);
	tp_tune_timed(&r.tu, r.now);
	ok(!tp_tune_over(&r.tu, r.now + 150 * MS) &&
	   tp_tune_over(&r.tu, r.now + 201 * MS) && !tp_tune_pair(&r.tu),
	   "a trial's first iteration ends past %.1fx the keys' mean",
	   TP_TUNE_ABORT_FIRST);
	r.now += 300 * MS;
	tp_tune_end(&r.tu, r.now, true, false, 0);
	ok(r.tu.trials == 1 && index_of(tp_tune_pair(&r.tu)) == 1,
	   "that candidate is out, the next on trial");
	tune_to_end(&r, ms, false);
	ok(!tp_tune_pending(&r.tu) && index_of(tp_tune_pair(&r.tu)) == 1,
	   "the fastest of those that finished kept");

	/* The keys' pair used host swap: evict-only pairs are not tried. */
	tp_tune_init(&r.tu);
	r.tu.trials = 0;
	for (c = 0; c < tp_tune_nr_pairs; c++)
		ms[c + 1] = tp_director_traits(tp_tune_pairs[c].director)->
			    evicts_only ? 50 : 100;
	tune_to_end(&r, ms, true);
	ok(evict_only_pairs() > 0 && !tp_tune_pair(&r.tu) &&
	   r.tu.trials == tp_tune_nr_pairs - evict_only_pairs(),
	   "%u evict-only pairs left out where the keys' pair swapped",
	   evict_only_pairs());

	/* Nothing paged: nothing to tune, not pending. */
	tp_tune_init(&r.tu);
	iterate(&r, 1 << 30, 100, false, false);
	ok(!tp_tune_pending(&r.tu) && !tp_tune_pair(&r.tu),
	   "an iteration that pages nothing leaves nothing pending");
	return exit_status();
}
