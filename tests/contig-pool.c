/* SPDX-License-Identifier: MIT */
/*
 * The contiguous pool (vmm.mode = contiguous): best fit on hand-built free
 * lists, coalescing, double frees refused with the pool unchanged, the
 * fragmentation sample, and random takes and puts against a bitmap model.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "vmm/contig_pool.h"

#define RAND_NR 257
#define RAND_STEPS 20000

/* A pool of @nr with only the runs in @runs (pairs start, len) free. */
static struct tp_contig_pool *with_runs(size_t nr, const size_t *runs,
					size_t nruns)
{
	struct tp_contig_pool *cp = tp_contig_pool_new(nr);
	size_t start;

	if (!cp || tp_contig_pool_take(cp, nr, TP_SIDE_LEFT, &start))
		bail_out("cannot build a pool of %zu", nr);
	for (size_t i = 0; i < nruns; i++)
		if (tp_contig_pool_put(cp, runs[2 * i], runs[2 * i + 1]))
			bail_out("cannot free run %zu", i);
	return cp;
}

static bool runs_are(const struct tp_contig_pool *cp, const size_t *runs,
		     size_t nruns)
{
	size_t sum = 0;

	if (cp->nruns != nruns)
		return false;
	for (size_t i = 0; i < nruns; i++) {
		if (cp->runs[i].start != runs[2 * i] ||
		    cp->runs[i].len != runs[2 * i + 1])
			return false;
		sum += runs[2 * i + 1];
	}
	return cp->nfree == sum;
}

static void best_fit(void)
{
	static const size_t runs[] = { 0, 4, 6, 3, 12, 5, 20, 3, 26, 6 };
	struct tp_contig_pool *cp = with_runs(32, runs, 5);
	size_t s = 99;

	ok(runs_are(cp, runs, 5), "hand-built free list: 5 runs, 21 free");
	ok(!tp_contig_pool_take(cp, 3, TP_SIDE_LEFT, &s) && s == 6,
	   "3 from the left: the leftmost exact run [6,9)");
	ok(!tp_contig_pool_take(cp, 3, TP_SIDE_RIGHT, &s) && s == 20,
	   "3 from the right: the other exact run [20,23)");
	ok(!tp_contig_pool_take(cp, 2, TP_SIDE_RIGHT, &s) && s == 2,
	   "2 from the right: smallest fitting run [0,4), its high end");
	ok(!tp_contig_pool_take(cp, 5, TP_SIDE_LEFT, &s) && s == 12,
	   "5: the exact run [12,17) before the larger [26,32)");
	ok(!tp_contig_pool_take(cp, 2, TP_SIDE_LEFT, &s) && s == 0,
	   "2 from the left: [0,2)");
	{
		static const size_t left[] = { 26, 6 };

		ok(runs_are(cp, left, 1), "one run [26,32) left");
	}
	ok(tp_contig_pool_take(cp, 7, TP_SIDE_LEFT, &s) == -ENOMEM &&
	   !tp_contig_pool_sample(cp, 7) && cp->frag_fails == 0,
	   "7 with 6 free: -ENOMEM, not a fragmentation sample");
	ok(tp_contig_pool_largest(cp) == 6 && tp_contig_pool_fits(cp, 6) &&
	   !tp_contig_pool_fits(cp, 7), "largest run 6");
	tp_contig_pool_free(cp);
}

static void coalescing(void)
{
	static const size_t runs[] = { 2, 2, 8, 2 };
	static const size_t joined[] = { 2, 8 };
	static const size_t all[] = { 0, 16 };
	struct tp_contig_pool *cp = with_runs(16, runs, 2);

	ok(tp_contig_pool_put(cp, 4, 4) == 0 && runs_are(cp, joined, 1),
	   "a put between two runs joins all three into [2,10)");
	ok(tp_contig_pool_put(cp, 9, 2) == -EINVAL && runs_are(cp, joined, 1),
	   "a put overlapping a free run is -EINVAL, pool unchanged");
	ok(tp_contig_pool_put(cp, 15, 2) == -EINVAL &&
	   tp_contig_pool_put(cp, 3, 0) == -EINVAL && runs_are(cp, joined, 1),
	   "a put past the end or of nothing is -EINVAL, pool unchanged");
	{
		static const size_t r[] = { 0, 10 };

		ok(tp_contig_pool_put(cp, 0, 2) == 0 && runs_are(cp, r, 1),
		   "a put just left of a run extends it down");
	}
	{
		static const size_t r[] = { 0, 10, 12, 1 };

		ok(tp_contig_pool_put(cp, 12, 1) == 0 && runs_are(cp, r, 2),
		   "a put with no free neighbour is a new run");
	}
	{
		static const size_t r[] = { 0, 10, 12, 4 };

		ok(tp_contig_pool_put(cp, 13, 3) == 0 && runs_are(cp, r, 2),
		   "a put just right of a run extends it up");
	}
	ok(tp_contig_pool_put(cp, 10, 2) == 0 && runs_are(cp, all, 1),
	   "the last gap closed: one run, the whole pool");
	tp_contig_pool_free(cp);
}

static void fragmentation(void)
{
	/* 6 of 16 free in runs of 2: 4 contiguous cannot be had. */
	static const size_t runs[] = { 1, 2, 6, 2, 12, 2 };
	struct tp_contig_pool *cp = with_runs(16, runs, 3);
	size_t s;

	ok(tp_contig_pool_take(cp, 4, TP_SIDE_LEFT, &s) == -ENOMEM &&
	   runs_are(cp, runs, 3),
	   "4 with 6 free in runs of 2: -ENOMEM, pool unchanged");
	ok(tp_contig_pool_sample(cp, 4) && cp->frag_fails == 1 &&
	   tp_contig_pool_frag_ppm(cp) == 375000,
	   "one fragmentation sample: 6/16 = 375000 ppm");
	diag("fragmentation %" PRIu64 " ppm", tp_contig_pool_frag_ppm(cp));
	ok(tp_contig_pool_take(cp, 7, TP_SIDE_LEFT, &s) == -ENOMEM &&
	   !tp_contig_pool_sample(cp, 7) && !tp_contig_pool_sample(cp, 2) &&
	   cp->frag_fails == 1,
	   "7 with 6 free is a shortage, 2 fits: neither is fragmentation");
	tp_contig_pool_free(cp);
}

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The best fit by brute force over @taken: start of the chosen run. */
static bool model_take(const bool *taken, size_t nr, size_t n, bool right,
		       size_t *start)
{
	size_t best_len = 0, best = 0;

	for (size_t i = 0; i < nr;) {
		size_t j = i;

		if (taken[i]) {
			i++;
			continue;
		}
		while (j < nr && !taken[j])
			j++;
		if (j - i >= n && (!best_len || j - i < best_len ||
				   (j - i == best_len && right))) {
			best_len = j - i;
			best = i;
		}
		i = j;
	}
	if (!best_len)
		return false;
	*start = right ? best + best_len - n : best;
	return true;
}

static void random_model(void)
{
	struct tp_contig_pool *cp = tp_contig_pool_new(RAND_NR);
	bool taken[RAND_NR] = { false };
	size_t owned[RAND_NR][2], nowned = 0, bad = 0, frees = 0;
	uint64_t seed = 0x5eed1234abcdull;

	if (getenv("TP_SEED"))
		seed = strtoull(getenv("TP_SEED"), NULL, 0);
	diag("seed %#" PRIx64 " (TP_SEED to replay)", seed);
	rng = seed;
	for (int step = 0; step < RAND_STEPS && !bad; step++) {
		if (nowned && (next() % 3 == 0 || nowned == RAND_NR)) {
			size_t k = next() % nowned;

			if (tp_contig_pool_put(cp, owned[k][0], owned[k][1]))
				bad++;
			for (size_t i = 0; i < owned[k][1]; i++)
				taken[owned[k][0] + i] = false;
			owned[k][0] = owned[--nowned][0];
			owned[k][1] = owned[nowned][1];
			frees++;
		} else {
			size_t n = 1 + next() % 12, s = 0, ms = 0;
			bool right = next() & 1;
			bool got = !tp_contig_pool_take(cp, n,
					right ? TP_SIDE_RIGHT : TP_SIDE_LEFT, &s);
			bool want = model_take(taken, RAND_NR, n, right, &ms);

			if (got != want || (got && s != ms)) {
				diag("step %d: take %zu %s: pool %d@%zu, model %d@%zu",
				     step, n, right ? "right" : "left", got, s,
				     want, ms);
				bad++;
				break;
			}
			if (!got)
				continue;
			for (size_t i = 0; i < n; i++)
				taken[s + i] = true;
			owned[nowned][0] = s;
			owned[nowned++][1] = n;
		}
	}
	ok(!bad, "%d random takes and puts (%zu puts) agree with a brute-force best fit",
	   RAND_STEPS, frees);
	{
		size_t nfree = 0, runs = 0;

		for (size_t i = 0; i < RAND_NR; i++) {
			nfree += !taken[i];
			runs += !taken[i] && (i == 0 || taken[i - 1]);
		}
		ok(cp->nfree == nfree && cp->nruns == runs,
		   "free chunks and runs match the model (%zu free in %zu runs)",
		   nfree, runs);
	}
	tp_contig_pool_free(cp);
}

int main(void)
{
	plan_tests(21);
	best_fit();
	coalescing();
	fragmentation();
	random_model();
	return exit_status();
}
