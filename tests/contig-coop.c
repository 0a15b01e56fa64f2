/* SPDX-License-Identifier: MIT */
/*
 * Coop's sliding window (§3.3): on hand-built layouts the window is the
 * one expected; on random layouts its cost equals the brute-force minimum
 * over every gapless window that covers the request; and the bounded
 * search (h known only as a lower bound until asked, some tensors found
 * unable to leave when asked) gives tp_coop_window()'s very window on
 * the layout without those tensors, asking fewer h than there are.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "policy/filter_coop.h"
#include "tests/tap.h"

#define LAYOUTS 3000
#define MAXSEG 40

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Brute force: every [lo, hi] with no gap covering @n; -1 when none. */
static double brute(const struct tp_coop_seg *s, size_t ns, size_t n)
{
	double best = -1;

	for (size_t lo = 0; lo < ns; lo++) {
		size_t len = 0;
		double sum = 0;

		for (size_t hi = lo; hi < ns; hi++) {
			if (hi > lo && s[hi - 1].start + s[hi - 1].len != s[hi].start)
				break;
			len += s[hi].len;
			sum += s[hi].h;
			if (len >= n && (best < 0 || sum < best))
				best = sum;
		}
	}
	return best;
}

static void figure(void)
{
	/*
	 * After Coop Fig. 2: x0..x4 in address order, the activations x0
	 * and x2 cheap and one chunk each. Evicting the two cheapest (DTR)
	 * frees two chunks that are not adjacent; the window only takes
	 * address-adjacent tensors.
	 */
	struct tp_coop_seg s[] = {
		{ .start = 0, .len = 1, .h = 1 },	/* x0: cheap */
		{ .start = 1, .len = 2, .h = 10 },	/* x1: conv */
		{ .start = 3, .len = 1, .h = 1 },	/* x2: cheap */
		{ .start = 4, .len = 2, .h = 10 },	/* x3 */
		{ .start = 6, .len = 2, .h = 3 },	/* x4 */
	};
	size_t lo = 9, hi = 9;
	double cost = -1;

	ok(tp_coop_window(s, 5, 2, &lo, &hi, &cost) && lo == 4 && hi == 4 &&
	   cost == 3, "2 chunks: x4 alone (h 3), not x0 + x2 which are apart");
	s[4].h = 30;
	ok(tp_coop_window(s, 5, 2, &lo, &hi, &cost) && lo == 1 && hi == 1 &&
	   cost == 10, "x4 dearer: the first of x1 and x3 (h 10)");
	s[1].h = 0;
	s[1].t = NULL;		/* x1 freed: a free run counts for nothing */
	ok(tp_coop_window(s, 5, 3, &lo, &hi, &cost) && lo == 0 && hi == 1 &&
	   cost == 1, "3 chunks with x1 free: x0 and the free run (h 1)");
	s[3].start = 5;		/* a wall between x2 and x3 */
	s[4].start = 7;
	ok(tp_coop_window(s, 5, 5, &lo, &hi, &cost) == false,
	   "5 chunks across a wall: no window");
	ok(tp_coop_window(s, 5, 4, &lo, &hi, &cost) && lo == 0 && hi == 2 &&
	   cost == 2, "4 chunks: x0, free, x2 up to the wall (h 2)");
}

static void random_layouts(void)
{
	struct tp_coop_seg s[MAXSEG];
	size_t bad = 0, found = 0;
	uint64_t seed = 0xc00b5eedull;

	if (getenv("TP_SEED"))
		seed = strtoull(getenv("TP_SEED"), NULL, 0);
	diag("seed %#" PRIx64 " (TP_SEED to replay)", seed);
	rng = seed;
	for (int k = 0; k < LAYOUTS && bad < 3; k++) {
		size_t ns = 1 + next() % MAXSEG, at = 0, total = 0, n, lo, hi;
		double cost, want;
		bool got;

		for (size_t i = 0; i < ns; i++) {
			/* One in five is a wall of 1-3 chunks before it. */
			if (next() % 5 == 0)
				at += 1 + next() % 3;
			s[i].start = at;
			s[i].len = 1 + next() % 6;
			/* A free run (h 0) one time in four. */
			s[i].h = next() % 4 ? (double)(next() % 1000) / 7.0 : 0;
			at += s[i].len;
			total += s[i].len;
		}
		n = 1 + next() % (total + 2);
		want = brute(s, ns, n);
		got = tp_coop_window(s, ns, n, &lo, &hi, &cost);
		if (got != (want >= 0)) {
			diag("layout %d: window %d, brute force %g", k, got, want);
			bad++;
			continue;
		}
		if (!got)
			continue;
		found++;
		{
			size_t len = 0;
			double sum = 0;
			bool gapless = true;

			for (size_t i = lo; i <= hi; i++) {
				len += s[i].len;
				sum += s[i].h;
				if (i > lo && s[i - 1].start + s[i - 1].len != s[i].start)
					gapless = false;
			}
			if (!gapless || len < n || sum != cost ||
			    fabs(cost - want) > 1e-9 * (1 + want)) {
				diag("layout %d: [%zu,%zu] cost %g, brute force %g",
				     k, lo, hi, cost, want);
				bad++;
			}
		}
	}
	ok(!bad, "%d random layouts: the window is gapless, covers the request, "
	   "and costs the brute-force minimum (%zu had one)", LAYOUTS, found);
}

/* The exact h of the bounded search's layouts, and who was asked. */
struct exact {
	const double *h;	/* by cand - 1; INFINITY: cannot leave */
	size_t asked;
};

static double ask(void *priv, const struct tp_coop_seg *s)
{
	struct exact *e = priv;

	e->asked++;
	return e->h[s->cand - 1];
}

static void bounded_layouts(void)
{
	struct tp_coop_seg s[MAXSEG], plain[MAXSEG];
	double h[MAXSEG];
	size_t bad = 0, found = 0, asked = 0, segs = 0;

	rng = 0xb0a7d5eedull;
	for (int k = 0; k < LAYOUTS && bad < 3; k++) {
		size_t ns = 1 + next() % MAXSEG, at = 0, total = 0, np = 0;
		size_t n, lo = 0, hi = 0, plo = 0, phi = 0;
		struct exact e = { h, 0 };
		double cost = -1, pcost = -1;
		bool pgot;
		int ret;

		for (size_t i = 0; i < ns; i++) {
			if (next() % 5 == 0)
				at += 1 + next() % 3;
			s[i] = (struct tp_coop_seg){ .start = at,
						     .len = 1 + next() % 6 };
			at += s[i].len;
			total += s[i].len;
			if (next() % 4 == 0)
				continue;	/* a free run: h 0, no tensor */
			s[i].cand = i + 1;
			/* small integers: ties between windows are common */
			h[i] = next() % 8 == 0 ? INFINITY :
			       (double)(next() % 12);
			s[i].h = isinf(h[i]) ? (double)(next() % 12) :
				 h[i] * (double)(next() % 5) / 4.0;
		}
		/* The plain search sees no wall tensor: a gap in the list. */
		for (size_t i = 0; i < ns; i++) {
			if (s[i].cand && isinf(h[i]))
				continue;
			plain[np] = s[i];
			plain[np++].h = s[i].cand ? h[i] : 0;
		}
		n = 1 + next() % (total + 2);
		pgot = tp_coop_window(plain, np, n, &plo, &phi, &pcost);
		ret = tp_coop_window_bounded(s, ns, n, ask, &e, &lo, &hi, &cost);
		segs += ns;
		asked += e.asked;
		if ((ret == 0) != pgot || (ret && ret != -ENOENT)) {
			diag("layout %d: bounded %d, plain %d", k, ret, pgot);
			bad++;
			continue;
		}
		if (!pgot)
			continue;
		found++;
		/* The same window: its first and last segments' addresses. */
		if (cost != pcost || s[lo].start != plain[plo].start ||
		    s[hi].start != plain[phi].start) {
			diag("layout %d: bounded [%zu,%zu] %g, plain [%zu,%zu] %g",
			     k, lo, hi, cost, plo, phi, pcost);
			bad++;
		}
	}
	ok(!bad, "%d random layouts with walls found when asked: the bounded search gives the plain window, ties included (%zu had one)",
	   LAYOUTS, found);
	ok(asked < segs, "it asked %zu exact h of %zu segments", asked, segs);
}

int main(void)
{
	plan_tests(8);
	figure();
	random_layouts();
	bounded_layouts();
	return exit_status();
}
