/* SPDX-License-Identifier: MIT */
/*
 * Replaying a trace's split marks (tpager-trace(5) split=, policy.split)
 * on the sim backend. An op marked splittable that does not fit whole
 * runs in parts: the replay fits under a budget below the op's working
 * set, its peak within it, the same figures twice; with policy.split off,
 * or a director whose auto leaves it off, the same budget does not fit.
 * The parts' virtual time adds up to the op's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace/replay.h"
#include "trace/trace.h"
#include "tests/tap.h"

#define MB	(1024 * 1024)

/*
 * gen -> a (8 MB, regenerable); big(a, w) -> y (8 MB), cut 8 rows of a
 * and y, w (1 MB) whole; free a; sum(y) -> s (1 MB); free y. The big op
 * needs 17 MB at once.
 */
static struct tp_trace *build(void)
{
	struct tp_trace *t = tp_trace_new();
	const struct tp_trace_out_spec act = { 8 * MB, TP_TRACE_ACTIVATION |
					       TP_TRACE_COMPUTABLE,
					       TP_TRACE_OUT_FRESH, 0 };
	const struct tp_trace_out_spec small = { 1 * MB, TP_TRACE_ACTIVATION |
						 TP_TRACE_COMPUTABLE,
						 TP_TRACE_OUT_FRESH, 0 };
	uint32_t w, a, y, s, big;

	if (!t || tp_trace_add_mark(t, TP_TRACE_EV_ITER) ||
	    tp_trace_add_tensor(t, 1 * MB, TP_TRACE_PARAM, TP_TRACE_NONE, &w) ||
	    tp_trace_add_op(t, "gen", 3, 1000000, NULL, 0, &act, 1, &a) ||
	    tp_trace_add_op(t, "big", 3, 4000000, (uint32_t[]){ a, w }, 2,
			    &act, 1, &y))
		return NULL;
	big = (uint32_t)t->n_ops - 1;
	if (tp_trace_set_split(t, big, 8, 1, 1) ||
	    tp_trace_add_free(t, a) ||
	    tp_trace_add_op(t, "sum", 3, 500000, &y, 1, &small, 1, &s) ||
	    tp_trace_add_free(t, y) || tp_trace_add_free(t, s))
		return NULL;
	return t;
}

static struct tp_replay_opts opts(uint64_t budget, const char *director,
				  const char *extra)
{
	return (struct tp_replay_opts){
		.budget_bytes = budget, .chunk_size = MB,
		.filter = "overlap", .director = director, .prefetch = 0,
		.remap_ns = 0, .iterations = 1, .extra = extra,
	};
}

int main(void)
{
	struct tp_trace *t = build();
	struct tp_replay_result r, r2, u;
	struct tp_replay_opts o;
	int rc;

	plan_tests(9);
	if (!t)
		bail_out("building the trace");

	o = opts(0, "delta-overlap", NULL);
	rc = tp_replay_run(t, &o, &u);
	ok(!rc && u.status == TP_REPLAY_OK &&
	   !u.split_runs && u.phys_peak >= 17 * MB,
	   "unconstrained: whole, peak %llu", (unsigned long long)u.phys_peak);

	o = opts(14 * MB, "delta-overlap", NULL);
	rc = tp_replay_run(t, &o, &r);
	ok(!rc && r.status == TP_REPLAY_OK,
	   "14 MB, below the big op's 17: fits (%s)", r.error);
	ok(r.split_runs == 1 && r.split_parts >= 2 && r.split_parts <= 8,
	   "the big op ran in %llu parts", (unsigned long long)r.split_parts);
	ok(r.phys_peak <= 14 * MB, "peak %llu within the budget",
	   (unsigned long long)r.phys_peak);
	ok(r.time_ns >= u.time_ns && r.time_ns - u.time_ns < 100000,
	   "the parts take the op's time (+%llu ns of remaps)",
	   (unsigned long long)(r.time_ns - u.time_ns));
	ok(!tp_replay_run(t, &o, &r2) && r2.status == TP_REPLAY_OK &&
	   r2.time_ns == r.time_ns && r2.split_parts == r.split_parts &&
	   r2.phys_peak == r.phys_peak && r2.evictions == r.evictions,
	   "the same figures twice");

	o = opts(14 * MB, "delta-overlap", "policy.split=off");
	ok(!tp_replay_run(t, &o, &r) && r.status == TP_REPLAY_OOM &&
	   !r.split_runs, "policy.split=off: 14 MB do not fit");
	o = opts(14 * MB, "evict", NULL);
	ok(!tp_replay_run(t, &o, &r) && r.status == TP_REPLAY_OOM,
	   "the evict director's auto runs ops whole: 14 MB do not fit");
	o = opts(10 * MB, "delta-overlap", NULL);
	ok(!tp_replay_run(t, &o, &r) && r.status == TP_REPLAY_OOM,
	   "10 MB: the cut input alone, 8 MB, and its parts do not fit");

	tp_trace_free(t);
	return exit_status();
}
