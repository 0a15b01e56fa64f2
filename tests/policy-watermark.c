/* SPDX-License-Identifier: MIT */
/*
 * Watermarks and link bandwidth: release starts above
 * pager.high_watermark and goes on down to pager.low_watermark (DELTA
 * §4.3), following tp_ctl changes; b starts at policy.link_bandwidth *
 * policy.link_utilisation (DELTA: 35%) where the key is set, else at what
 * the backend says its link achieves, unscaled (else 32 GB/s * 35%), and
 * then follows completed copies as a byte-weighted moving average; the
 * link occupancy of an iteration.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "ctx/ctx.h"
#include "policy/bandwidth.h"
#include "policy/policy.h"
#include "pager/watermark.h"
#include "tap.h"
#include "tests/policy-testenv.h"

static void watermarks(void)
{
	struct tp_ctx ctx;
	struct tp_policy *pol;
	const uint64_t B = 1000;

	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);	/* high 75%, low 65% */
	/* The overlap filter (the default) releases at demand only. */
	tp_conf_set(&ctx.conf, "policy.filter", "delta", "test", 0);
	pol = tp_policy_create(&ctx.conf, ctx.pager, ctx.vmm);
	if (!pol)
		bail_out("tp_policy_create");
	ok(tp_policy_release_bytes(pol, 750, B) == 0,
	   "at the high watermark (750 of 1000): nothing to release");
	ok(tp_policy_release_bytes(pol, 760, B) == 110,
	   "above it (760): release down to the low watermark, 110");
	ok(tp_policy_release_bytes(pol, 700, B) == 50,
	   "still releasing between the marks (700): 50 more");
	ok(tp_policy_release_bytes(pol, 650, B) == 0,
	   "at the low watermark: stop");
	ok(tp_policy_release_bytes(pol, 700, B) == 0,
	   "between the marks, not releasing: nothing");
	/* tp_ctl_set of a RUN key takes effect at the next call. */
	tp_conf_set(&ctx.conf, "pager.high_watermark", "50", "test", 0);
	tp_conf_set(&ctx.conf, "pager.low_watermark", "40", "test", 0);
	ok(tp_policy_release_bytes(pol, 600, B) == 200,
	   "high 50%%, low 40%% set at run time: 600 releases 200");
	tp_conf_set(&ctx.conf, "pager.low_watermark", "90", "test", 0);
	ok(tp_policy_release_bytes(pol, 600, B) == 100,
	   "a low watermark above the high one counts as the high one");
	tp_policy_destroy(pol);
	{
		struct tp_watermark wm = { 0 };

		ok(tp_watermark_release(&wm, 100, 100, 1000, 1000) == 0 &&
		   tp_watermark_release(&wm, 75, 65, 0, 0) == 0,
		   "full budget at 100%%, or no budget: nothing");
	}
}

static void bandwidth(void)
{
	struct tp_conf conf;
	struct tp_bandwidth bw;

	tp_conf_defaults(&conf);
	tp_bw_init(&bw, 0);
	ok(tp_bw_get(&bw, &conf) == 32 * 0.35,
	   "before any copy, no backend figure: 32 GB/s * 35%% = %.2f B/ns",
	   tp_bw_get(&bw, &conf));
	tp_bw_destroy(&bw);
	tp_bw_init(&bw, 50.3);
	ok(tp_bw_get(&bw, &conf) == 50.3,
	   "before any copy: the backend's link as achieved, unscaled (%.2f)",
	   tp_bw_get(&bw, &conf));
	tp_conf_set(&conf, "policy.link_bandwidth", "25", "test", 0);
	tp_conf_set(&conf, "policy.link_utilisation", "0.5", "test", 0);
	ok(tp_bw_get(&bw, &conf) == 12.5,
	   "a configured peak comes first, and follows tp_ctl changes: 12.5");
	tp_bw_sample(&bw, 0, 100);
	tp_bw_sample(&bw, 100, 0);
	ok(tp_bw_get(&bw, &conf) == 12.5, "empty samples are ignored");
	tp_bw_sample(&bw, 1000, 100);
	ok(tp_bw_get(&bw, &conf) == 10, "first copy: 1000 B in 100 ns = 10");
	/* bytes 1000 + (3000-1000)/8 = 1250, ns 100 + (100-100)/8 = 100 */
	tp_bw_sample(&bw, 3000, 100);
	ok(tp_bw_get(&bw, &conf) == 12.5,
	   "moving average: (1000 + 2000/8) / 100 = 12.5");
	/* weighted by bytes: a tiny slow copy moves it little */
	tp_bw_sample(&bw, 1, 1000);
	/* bytes 1250 + (1-1250)/8 = 1093.875; ns 100 + 900/8 = 212.5 */
	ok(fabs(tp_bw_get(&bw, &conf) - 1093.875 / 212.5) < 1e-12,
	   "byte-weighted: %.4f B/ns after a 1-byte copy of 1 µs",
	   tp_bw_get(&bw, &conf));
	tp_conf_set(&conf, "policy.costs", "model", "test", 0);
	ok(tp_bw_get(&bw, &conf) == 12.5,
	   "policy.costs=model: the configured 25 GB/s * 50%%, measured or not");
	tp_conf_set(&conf, "policy.costs", "measured", "test", 0);
	tp_conf_set(&conf, "policy.link_bandwidth", "0", "test", 0);
	tp_conf_set(&conf, "policy.costs", "model", "test", 0);
	ok(tp_bw_get(&bw, &conf) == 50.3,
	   "policy.costs=model, the key at 0: the backend's link");
	tp_conf_set(&conf, "policy.costs", "measured", "test", 0);

	/* occupancy: 400 ns of copies in a 1000 ns iteration */
	tp_bw_iteration_begin(&bw, 5000);
	tp_bw_sample(&bw, 4000, 300);
	tp_bw_sample(&bw, 1000, 100);
	tp_bw_iteration_end(&bw, 6000);
	ok(fabs(tp_bw_occupancy(&bw) - 0.4) < 1e-12,
	   "link occupancy of the iteration: 0.4");
	tp_bw_iteration_begin(&bw, 6000);
	tp_bw_sample(&bw, 4000, 3000);
	tp_bw_iteration_end(&bw, 7000);
	ok(tp_bw_occupancy(&bw) == 1, "occupancy is capped at 1");
	tp_bw_destroy(&bw);
}

static void policy_bandwidth(void)
{
	struct tp_ctx ctx;
	struct tp_policy *pol;
	struct tp_stats st;

	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	pol = pt_policy(&ctx, false);
	memset(&st, 0xff, sizeof(st));
	tp_policy_stats(pol, &st);
	ok(st.policy_decisions == 0 && st.policy_ns == 0 &&
	   st.prefetch_issued == UINT64_MAX && st.phys_bytes == UINT64_MAX,
	   "a new policy's statistics are zero; the pager's are left alone");
	{
		const struct tp_victim_ops *ops = tp_policy_victim_ops(pol);
		struct tp_tensor *v;
		enum tp_leave how;

		ops->choose(ops->priv, 1, false, &v, &how);
		tp_policy_stats(pol, &st);
		ok(st.policy_decisions == 1, "a choose() is a decision");
	}
	tp_policy_destroy(pol);
}

int main(void)
{
	plan_tests(9 + 10 + 2);
	watermarks();
	bandwidth();
	policy_bandwidth();
	return exit_status();
}
