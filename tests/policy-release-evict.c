/* SPDX-License-Identifier: MIT */
/*
 * An evict-only director releases at demand only: above the watermark it
 * is not asked for a release ahead of need, which it can only refuse
 * (evicting before anyone needs the room throws work away) after scoring
 * every candidate. Every choice is then a victim that left.
 *
 * A chain of one-chunk ops on sim under a budget of 16 chunks with the
 * watermark at 50%: dtr/evict and coop/evict (contiguous pool) choose
 * once per eviction; delta/delta, which may offload ahead of need, is
 * still asked, and releases.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"

#define CHUNK	(64u << 10)
#define OPS	64

static void chain(const char *policy, const char *extra, struct tp_stats *s)
{
	struct tp_tensor *x, *keep[OPS];
	struct tp_ctx *ctx;
	char opts[512], f[32];
	const char *d = strchr(policy, '/');

	snprintf(f, sizeof(f), "%.*s", (int)(d - policy), policy);
	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=64K,pager.budget=%u,"
		 "pager.high_watermark=50,pager.low_watermark=40,"
		 "policy.filter=%s,policy.director=%s%s",
		 16 * CHUNK, f, d + 1, extra);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x = tp_tensor_create(ctx, CHUNK, 0);
	if (!x || !tp_tensor_acquire(ctx, x, TP_WRITE))
		bail_out("x");
	tp_tensor_release(ctx, x);
	for (unsigned i = 0; i < OPS; i++)
		keep[i] = tops_nop_run(ctx, i ? keep[i - 1] : x, NULL, CHUNK);
	if (tp_stats_get(ctx, s))
		bail_out("tp_stats_get");
	for (unsigned i = 0; i < OPS; i++)
		tp_tensor_free(ctx, keep[i]);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_stats s;

	plan_tests(3);

	chain("dtr/evict", "", &s);
	ok(s.evictions > 0 && s.policy_decisions == s.evictions,
	   "dtr/evict: %llu choices for %llu evictions",
	   (unsigned long long)s.policy_decisions,
	   (unsigned long long)s.evictions);
	chain("coop/evict", ",vmm.mode=contiguous", &s);
	ok(s.evictions > 0 && s.policy_decisions == s.evictions,
	   "coop/evict, contiguous: %llu choices for %llu evictions",
	   (unsigned long long)s.policy_decisions,
	   (unsigned long long)s.evictions);
	chain("delta/delta", "", &s);
	ok(s.offloads > 0,
	   "delta/delta: released ahead of need (%llu offloads, %llu choices)",
	   (unsigned long long)s.offloads,
	   (unsigned long long)s.policy_decisions);

	return exit_status();
}
