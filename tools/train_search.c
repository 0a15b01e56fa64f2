// SPDX-License-Identifier: MIT
/*
 * tpager-train --max-batch: the largest batch that trains under the
 * budget, with paging and without, found by doubling then bisection,
 * each try told as it completes, within --max-batch-time; with paging,
 * the batch found trains again for --max-batch-confirm steps before it
 * is the answer.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/train_run.h"

enum try_result { TRY_FITS, TRY_NO_FIT, TRY_STOPPED, TRY_ERROR };

static const char *const try_words[] = {
	[TRY_FITS] = "fits", [TRY_NO_FIT] = "does not fit",
	[TRY_STOPPED] = "stopped at the time limit",
};

struct search {
	const struct train_args *a;
	uint64_t budget;
	/* vmm.workspace_max of every try, bytes; -1: a percent */
	int64_t workspace_max;
	double start, deadline;		/* monotonic s; deadline 0: none */
	unsigned tries;
	bool stopped;			/* the time limit ended it */
	/* with paging: the largest batch that fit, and its try */
	unsigned best;
	struct run best_run;
	/* with paging: the try that fit with the most samples a second */
	unsigned fastest;
	double fastest_step_s;
	/* with paging: the smallest batch that did not, and why */
	unsigned no_fit;
	struct run no_fit_run;
	/* the answer trained --max-batch-confirm steps (0: not, or none) */
	unsigned confirmed;
	/* with paging: the batches whose tries fit, in the order tried */
	unsigned fits[64];
	unsigned nr_fits;
};

/* One try as it completes: a line on stderr, or a JSON line. */
static void print_try(const struct search *s, unsigned batch, bool paging,
		      unsigned steps, const struct run *r,
		      enum try_result res, double secs)
{
	const struct train_args *a = s->a;
	char peak[32], host[32];

	if (a->json) {
		printf("{\"try\":%u,\"paging\":%s,\"batch\":%u,\"result\":\"%s\","
		       "\"steps\":%u,\"step_s\":", s->tries,
		       paging ? "true" : "false", batch, try_words[res],
		       steps);
		if (paging && res == TRY_FITS)
			printf("%.6f,\"images_per_s\":%.3f", r->step_s,
			       images_per_s(batch, r));
		else
			printf("null,\"images_per_s\":null");
		printf(",\"phys_peak\":%" PRIu64 ",\"host_peak\":%" PRIu64
		       ",\"evictions\":%" PRIu64 ",\"offloads\":%" PRIu64
		       ",\"recomputes\":%" PRIu64 ",\"split_runs\":%" PRIu64
		       ",\"split_parts\":%" PRIu64 ",\"swap_full\":%" PRIu64
		       ",\"elapsed_s\":%.3f,\"why\":", r->st.phys_peak,
		       r->st.host_peak, r->st.evictions, r->st.offloads,
		       r->st.recomputes, r->st.split_runs, r->st.split_parts,
		       r->st.swap_full, secs);
		json_str(res == TRY_FITS || !paging ? NULL : r->why);
		printf("}\n");
		fflush(stdout);
		return;
	}
	if (a->quiet)
		return;
	fmt_bytes(peak, sizeof(peak), r->st.phys_peak);
	fmt_bytes(host, sizeof(host), r->st.host_peak);
	if (!paging) {
		fprintf(stderr, "%s: without paging: batch %u %s (peak %s) [%.1f s]\n",
			prog, batch, try_words[res], peak, secs);
		return;
	}
	if (res == TRY_FITS)
		fprintf(stderr, "%s: with paging: batch %u fits %u steps: %.3f ms a step, %.1f samples/s, peak %s, host swap %s, %" PRIu64 " split runs (%" PRIu64 " parts) [%.1f s]\n",
			prog, batch, steps, r->step_s * 1e3,
			images_per_s(batch, r), peak, host, r->st.split_runs,
			r->st.split_parts, secs);
	else
		fprintf(stderr, "%s: with paging: batch %u over %u steps %s%s%s (%" PRIu64 " split runs, host swap %s) [%.1f s]\n",
			prog, batch, steps, try_words[res],
			r->why[0] && res != TRY_STOPPED ? ": " : "",
			res != TRY_STOPPED ? r->why : "", r->st.split_runs,
			host, secs);
}

/* The fastest try's samples a second, 0 before any. */
static double fastest_rate(const struct search *s)
{
	return s->fastest ? s->fastest / s->fastest_step_s : 0;
}

/* A try with paging that fit: the largest so far, the fastest so far. */
static void note_fit(struct search *s, unsigned batch, const struct run *r)
{
	if (batch > s->best) {
		s->best = batch;
		s->best_run = *r;
	}
	if (images_per_s(batch, r) > fastest_rate(s)) {
		s->fastest = batch;
		s->fastest_step_s = r->step_s;
	}
}

/*
 * Try @batch: with paging, @steps steps under the budget must complete;
 * without, one unconstrained step must peak within it (the same
 * allocator with nothing allowed to leave fits exactly then, and the peak
 * is measured rather than found by a run that fails). What a try says,
 * it says as it completes.
 */
static enum try_result try_steps(struct search *s, unsigned batch,
				 bool paging, unsigned steps, struct run *r)
{
	const struct train_args *a = s->a;
	enum try_result res;
	double t0 = now_s();

	if (s->deadline && t0 >= s->deadline) {
		s->stopped = true;
		return TRY_STOPPED;
	}
	if (!paging)
		steps = 1;
	run_training(a, batch, steps, paging ? s->budget : 0, s->deadline,
		     false, NULL, r);
	s->tries++;
	if (!r->rc)
		res = paging || r->st.phys_peak <= s->budget ? TRY_FITS :
							       TRY_NO_FIT;
	else if (r->rc == -ETIMEDOUT)
		res = TRY_STOPPED;
	/* -EOVERFLOW: a tensor past the ops' 32-bit element counts */
	else if (r->rc == -ENOMEM || r->rc == -TP_ENOREGEN ||
		 r->rc == -TP_EDEPTH || r->rc == -TP_EWORK ||
		 r->rc == -EOVERFLOW)
		res = TRY_NO_FIT;
	else
		res = TRY_ERROR;
	if (res == TRY_ERROR) {
		run_error(a, paging ? "budgeted" : "unconstrained", batch, r);
		return res;
	}
	if (res == TRY_STOPPED)
		s->stopped = true;
	if (res == TRY_NO_FIT && swap_failed(r))
		snprintf(r->why, sizeof(r->why), "host swap is full (limit %" PRIu64 " bytes, reached %" PRIu64 ")",
			 r->host_limit, r->st.host_peak);
	print_try(s, batch, paging, steps, r, res, now_s() - t0);
	if (paging && res == TRY_FITS) {
		note_fit(s, batch, r);
		if (steps == a->try_steps &&
		    s->nr_fits < sizeof(s->fits) / sizeof(s->fits[0]))
			s->fits[s->nr_fits++] = batch;
	}
	if (paging && res == TRY_NO_FIT && (!s->no_fit || batch < s->no_fit)) {
		s->no_fit = batch;
		s->no_fit_run = *r;
	}
	return res;
}

/* A try of the search: --max-batch-steps steps with paging. */
static enum try_result try_batch(struct search *s, unsigned batch,
				 bool paging, struct run *r)
{
	return try_steps(s, batch, paging, s->a->try_steps, r);
}

/* The largest batch below @b whose try fit, 0 if none. */
static unsigned fit_below(const struct search *s, unsigned b)
{
	unsigned best = 0;

	for (unsigned i = 0; i < s->nr_fits; i++)
		if (s->fits[i] < b && s->fits[i] > best)
			best = s->fits[i];
	return best;
}

/*
 * The largest batch the tries found, *@with, trained again for
 * --max-batch-confirm steps: a batch whose first steps fit and whose
 * later ones do not (the policy learns the iteration as it goes) is no
 * answer. Where it fails, the batch a sixty-fourth below (at least one
 * less) is confirmed instead, at most CONFIRM_ROUNDS times; then, what
 * fits not being monotone in the batch, a bisection between the largest
 * batch below whose try fit and the last that failed, to a sixty-fourth,
 * that batch itself last, and where none was confirmed the same below
 * it, at most 2 * CONFIRM_ROUNDS tries more. *@with is
 * the largest batch confirmed, or stays the tries' answer, said
 * unconfirmed, when none was. -1: a run failed for another reason than
 * memory.
 */
#define CONFIRM_ROUNDS	8

/* One confirming try of @b: 1 fits (the answer now), 0 not, -1 error. */
static int confirm_try(struct search *s, unsigned b, unsigned *with)
{
	enum try_result res;
	struct run r;

	res = try_steps(s, b, true, s->a->confirm_steps, &r);
	if (res == TRY_ERROR)
		return -1;
	if (res != TRY_FITS)
		return 0;
	/* The longer run's step time is the steadier. */
	s->best = *with = s->confirmed = b;
	s->best_run = r;
	return 1;
}

static int confirm(struct search *s, unsigned *with)
{
	unsigned b = *with, steps = s->a->confirm_steps, lo, hi;
	int ret;

	if (!steps || steps <= s->a->try_steps || b <= 1)
		return 0;
	for (unsigned round = 0; round < CONFIRM_ROUNDS; round++) {
		ret = confirm_try(s, b, with);
		if (ret || s->stopped)
			return ret < 0 ? -1 : 0;
		hi = b;
		b -= b / 64 ? b / 64 : 1;
		if (!b)
			return 0;
	}
	/*
	 * Bisection to a sixty-fourth between the largest batch below whose
	 * try fit and the last that failed, that batch itself last; where
	 * none of it is confirmed, the same again below it.
	 */
	for (unsigned left = 2 * CONFIRM_ROUNDS;
	     left && (lo = fit_below(s, hi)); hi = lo) {
		while (left && hi - lo > (hi / 64 ? hi / 64 : 1)) {
			unsigned mid = lo + (hi - lo) / 2;

			left--;
			ret = confirm_try(s, mid, with);
			if (ret < 0 || s->stopped)
				return ret < 0 ? -1 : 0;
			if (ret)
				lo = mid;
			else
				hi = mid;
		}
		if (s->confirmed == lo)
			return 0;
		if (!left)
			return 0;
		left--;
		ret = confirm_try(s, lo, with);
		if (ret || s->stopped)
			return ret < 0 ? -1 : 0;
	}
	return 0;
}

/*
 * Doubling from @start, then bisection, above @lo known to fit and at most
 * @cap: the largest batch that fits, or, stopped by the time limit, the
 * largest found so far. -1 when a try failed for another reason than
 * memory.
 */
static int search(struct search *s, bool paging, unsigned lo,
		  unsigned start, unsigned cap, unsigned *best)
{
	unsigned hi = start > lo ? start : lo + 1;
	enum try_result res;
	struct run r;

	*best = lo;
	if (hi > cap)
		return 0;
	for (;;) {
		res = try_batch(s, hi, paging, &r);
		if (res == TRY_ERROR)
			return -1;
		if (res == TRY_STOPPED)
			return 0;
		if (res != TRY_FITS)
			break;
		lo = *best = hi;
		if (hi >= cap)
			return 0;
		hi = hi > cap / 2 ? cap : 2 * hi;
	}
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		res = try_batch(s, mid, paging, &r);
		if (res == TRY_ERROR)
			return -1;
		if (res == TRY_STOPPED)
			return 0;
		if (res == TRY_FITS)
			lo = *best = mid;
		else
			hi = mid;
	}
	return 0;
}

static void report_max_batch(const struct search *s, unsigned without,
			     unsigned with)
{
	const struct train_args *a = s->a;
	const struct run *b = &s->best_run, *n = &s->no_fit_run;
	double secs = now_s() - s->start;
	char buf[32];

	if (a->json) {
		printf("{\"model\":\"%s\",\"depth\":%u,\"backend\":\"%s\","
		       "\"budget_bytes\":%" PRIu64 ",\"max_batch_without\":%u,"
		       "\"max_batch_with\":%u,\"steps_per_try\":%u,"
		       "\"confirm_steps\":%u,\"confirmed\":%s,"
		       "\"time_limit_s\":%g,\"complete\":%s,\"tries\":%u,"
		       "\"elapsed_s\":%.3f,\"workspace_max\":", a->model,
		       a->mo.depth, a->backend, s->budget, without, with,
		       a->try_steps, a->confirm_steps,
		       s->confirmed ? "true" : "false", a->time_limit,
		       s->stopped ? "false" : "true", s->tries, secs);
		if (s->workspace_max < 0)
			printf("null,\"at_max\":");
		else
			printf("%" PRId64 ",\"at_max\":", s->workspace_max);
		if (with)
			printf("{\"batch\":%u,\"step_s\":%.6f,"
			       "\"images_per_s\":%.3f,\"phys_peak\":%" PRIu64
			       ",\"host_peak\":%" PRIu64 ",\"host_held\":%"
			       PRIu64 ",\"host_limit\":%"
			       PRIu64 ",\"split_runs\":%" PRIu64
			       ",\"split_parts\":%" PRIu64 ",\"evictions\":%"
			       PRIu64 ",\"offloads\":%" PRIu64
			       ",\"recomputes\":%" PRIu64 "}", with,
			       b->step_s, images_per_s(with, b),
			       b->st.phys_peak, b->st.host_peak,
			       b->st.host_held, b->host_limit,
			       b->st.split_runs, b->st.split_parts,
			       b->st.evictions, b->st.offloads,
			       b->st.recomputes);
		else
			printf("null");
		printf(",\"fastest\":");
		if (s->fastest)
			printf("{\"batch\":%u,\"step_s\":%.6f,"
			       "\"images_per_s\":%.3f}", s->fastest,
			       s->fastest_step_s, fastest_rate(s));
		else
			printf("null");
		printf(",\"first_no_fit\":");
		if (s->no_fit) {
			printf("{\"batch\":%u,\"swap_full\":%s,\"why\":",
			       s->no_fit, swap_failed(n) ? "true" : "false");
			json_str(n->why);
			printf("}");
		} else {
			printf("null");
		}
		printf("}\n");
		return;
	}
	fmt_bytes(buf, sizeof(buf), s->budget);
	printf("tpager-train: largest batch of %s%s%.0u under %s (%s backend)\n\n",
	       a->model, a->mo.depth ? "-" : "", a->mo.depth, buf, a->backend);
	printf("%-34s %8u\n", "without paging (peak <= budget)", without);
	printf("%-34s %8u\n", "with tpager", with);
	/* The host's convolutions take no scratch. */
	if (s->workspace_max > 0 && strcmp(a->backend, "host")) {
		fmt_bytes(buf, sizeof(buf), (uint64_t)s->workspace_max);
		printf("%-34s %11s (vmm.workspace_max)\n",
		       "a convolution's scratch", buf);
	}
	if (without)
		printf("%-34s %7.2fx\n", "ratio", (double)with / without);
	if (with) {
		printf("%-34s %8.3f ms\n", "time per step there",
		       b->step_s * 1e3);
		printf("%-34s %8.1f\n", "samples per second there",
		       images_per_s(with, b));
		fmt_bytes(buf, sizeof(buf), b->st.host_peak);
		printf("%-34s %11s\n", "host swap it needs", buf);
		printf("%-34s %8" PRIu64 " (%" PRIu64 " parts)\n",
		       "split runs there", b->st.split_runs,
		       b->st.split_parts);
	}
	if (s->fastest && s->fastest != with)
		printf("%-34s %8.1f (batch %u, of the tries)\n",
		       "most samples per second", fastest_rate(s),
		       s->fastest);
	if (s->no_fit)
		printf("batch %u does not fit: %s\n", s->no_fit,
		       n->why[0] ? n->why : tp_strerror(n->rc));
	printf("%u tries of %u steps in %.1f s\n", s->tries, a->try_steps,
	       secs);
	if (s->confirmed)
		printf("batch %u trained %u steps again before it was the answer\n",
		       s->confirmed, a->confirm_steps);
	else if (with > 1 && a->confirm_steps > a->try_steps && !s->stopped)
		printf("not confirmed: no batch from %u down trained %u steps\n",
		       with, a->confirm_steps);
	if (s->stopped)
		printf("stopped at the time limit (--max-batch-time %g s): the largest batch is at least %u\n",
		       a->time_limit, with);
}

/*
 * The scratch a convolution may take in every try, when the configuration
 * leaves it open: a sixteenth of the budget, so that the algorithms chosen
 * leave the room to the batch (a run at the batch found takes the same
 * vmm.workspace_max to go as fast; its bits are the same under any budget
 * with it). Else the configuration's, in bytes.
 */
static void bound_workspace(struct search *s, struct train_args *a)
{
	const struct tp_psize *w = &a->workspace_max;
	size_t len = strlen(a->extra);

	if (w->is_percent || w->bytes) {
		s->workspace_max = w->is_percent ? -1 : (int64_t)w->bytes;
		return;
	}
	s->workspace_max = (int64_t)(s->budget / 16);
	snprintf(a->extra + len, sizeof(a->extra) - len,
		 "%svmm.workspace_max=%" PRId64, len ? "," : "",
		 s->workspace_max);
}

static int search_batches(struct train_args *a)
{
	struct search s = { .a = a, .start = now_s() };
	unsigned with = 0, without = 0;
	unsigned probe = a->budget_percent ? a->mo.batch : 1;
	unsigned start = a->have_batch ? a->mo.batch : 1;
	struct run r;
	double t0;

	s.deadline = a->time_limit > 0 ? s.start + a->time_limit : 0;
	s.budget = a->budget_bytes;
	/*
	 * One unconstrained step gives the chunk size (and the peak a
	 * percent is of); a budget that cannot take a chunk, or batch 1 even
	 * with paging, is a bad argument, told in one line before searching.
	 */
	run_training(a, probe, 1, 0, s.deadline, false, NULL, &r);
	if (r.rc) {
		run_error(a, "unconstrained", probe, &r);
		return 1;
	}
	if (a->budget_percent)
		s.budget = budget_of(a, r.st.phys_peak);
	if (s.budget < r.st.chunk_size) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below one chunk (%" PRIu64 " bytes)\n",
			prog, s.budget, r.st.chunk_size);
		return 2;
	}
	bound_workspace(&s, a);
	/* Batch 1 with paging: told only when it fits, else the error. */
	t0 = now_s();
	run_training(a, 1, a->try_steps, s.budget, s.deadline, false, NULL,
		     &r);
	if (r.rc == -ENOMEM && swap_failed(&r)) {
		swap_error(a, 1, &r);
		return 1;
	}
	if (r.rc == -ETIMEDOUT) {
		fprintf(stderr, "%s: batch 1 did not finish within --max-batch-time %g s\n",
			prog, a->time_limit);
		return 1;
	}
	if (r.rc == -ENOMEM) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below the working set of %s at batch 1 (a step needs more than it)%s%s\n",
			prog, s.budget, a->model, r.why[0] ? ": " : "",
			r.why);
		return 1;
	}
	if (r.rc) {
		run_error(a, "budgeted", 1, &r);
		return 1;
	}
	s.tries++;
	print_try(&s, 1, true, a->try_steps, &r, TRY_FITS, now_s() - t0);
	note_fit(&s, 1, &r);
	with = 1;
	/*
	 * With paging first, from --batch: what the search is for, and
	 * what a known batch speeds up. Without paging from 1, never above
	 * the batch that fit with it: one unconstrained step of a batch many
	 * times the budget is the slowest try there is, and says nothing.
	 */
	if (search(&s, true, 1, start, MAX_BATCH_LIMIT, &with) ||
	    (!s.stopped && confirm(&s, &with)))
		return 1;
	/* Stopped with paging, the search without it is not begun. */
	if (!s.stopped && search(&s, false, 0, 1, with, &without))
		return 1;
	report_max_batch(&s, without, with);
	return 0;
}

int max_batch(const struct train_args *args)
{
	struct train_args *a = malloc(sizeof(*a));
	int rc;

	if (!a) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	*a = *args;
	rc = search_batches(a);
	free(a);
	return rc;
}
