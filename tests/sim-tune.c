// SPDX-License-Identifier: MIT
/*
 * policy.tune through a whole replay on the H200 profile: on VGG-16's
 * trace at 40% of its peak, where MSPS's filter with DELTA's director
 * beats the default pair, the default (policy.tune = auto) keeps another
 * pair and its steady iteration takes less than the default pair's alone
 * after as many warm-up passes; a pair chosen in the keys is run as it
 * is; and on DTR's ResNet-32 log at 7% and 8%, where an evict-only pair
 * on trial had left regenerations no room could hold (an op failed
 * where the default pair fits), every warm-up pass and the measured one
 * fit.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "trace/replay.h"

#define PROFILE	"vmm.sim.profile=h200,vmm.sim.driver_granule=2M"

static struct tp_trace *load(const char *path)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	char why[256];

	if (tp_trace_load(path, &fmt, &t, &err)) {
		tp_trace_error_str(&err, why, sizeof(why));
		diag("%s: %s", path, why);
		return NULL;
	}
	return t;
}

/* Replay @t at @ratio of its peak: @tuned warms up while tuning. */
static int replay(struct tp_trace *t, bool dtr, double ratio,
		  const char *filter, const char *director, unsigned warmup,
		  bool tuned, const char *extra, struct tp_replay_result *r)
{
	struct tp_trace_summary s;
	struct tp_replay_opts o = {
		.filter = filter, .director = director, .prefetch = -1,
		.warmup = warmup, .warmup_tuned = tuned, .extra = extra,
	};

	tp_trace_peak(t, &s);
	o.budget_bytes = (uint64_t)(ratio * (double)s.peak_bytes);
	tp_replay_defaults(&o, dtr, true);
	return tp_replay_run(t, &o, r) ? -1 :
	       r->status == TP_REPLAY_OK ? 0 : -1;
}

static void vgg(const char *top)
{
	char path[4096];
	struct tp_trace *t;
	struct tp_replay_result tu, keys, fixed;
	int rc;

	snprintf(path, sizeof(path), "%s/traces/vgg16-b128.trace", top);
	t = load(path);
	if (!t) {
		skip(3, "no trace at %s", path);
		return;
	}
	rc = replay(t, false, 0.40, NULL, NULL, 0, true, PROFILE, &tu);
	rc |= replay(t, false, 0.40, NULL, NULL, tu.warmup, false,
		     PROFILE ",policy.tune=off", &keys);
	ok(!rc && tu.warmup >= 10 && strcmp(tu.in_force, tu.policy) &&
	   !strcmp(keys.in_force, keys.policy),
	   "vgg16 at 40%%: %s kept in place of %s after %u warm-up passes",
	   tu.in_force, tu.policy, tu.warmup);
	ok(!rc && (double)tu.time_ns < 0.98 * (double)keys.time_ns,
	   "its iteration %.2f ms, the default pair's alone %.2f ms",
	   tu.time_ns / 1e6, keys.time_ns / 1e6);
	rc = replay(t, false, 0.40, "delta", "delta", 0, true, PROFILE,
		    &fixed);
	ok(!rc && fixed.warmup == 0 && !strcmp(fixed.in_force, "delta/delta"),
	   "delta/delta in the keys runs as it is (%s, %u warm-up passes)",
	   fixed.in_force, fixed.warmup);
	tp_trace_free(t);
}

static void resnet32(const char *top)
{
	char path[4096];
	struct tp_trace *t;

	snprintf(path, sizeof(path),
		 "%s/../shared/traces/dtr/resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log.gz",
		 top);
	t = access(path, R_OK) ? NULL : load(path);
	if (!t) {
		skip(2, "no DTR log at %s", path);
		return;
	}
	for (unsigned pct = 7; pct <= 8; pct++) {
		struct tp_replay_result r;
		int rc = replay(t, true, pct / 100.0, NULL, NULL, 0, true,
				PROFILE, &r);

		ok(!rc, "resnet32 log at %u%%: fits through %u warm-up passes (%s: %s)",
		   pct, r.warmup, r.in_force, rc ? r.error : "ok");
	}
	tp_trace_free(t);
}

int main(void)
{
	const char *top = getenv("top_srcdir");

	plan_tests(5);
	vgg(top ? top : "..");
	resnet32(top ? top : "..");
	return exit_status();
}
