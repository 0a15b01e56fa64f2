/* SPDX-License-Identifier: MIT */
/*
 * An evict-only director (policy.director = evict) never sends away a
 * tensor lineage cannot regenerate, so such a tensor is no candidate of
 * the policy's index at all; a director that offloads, set at run time,
 * is offered them again and may offload them, and setting evict back
 * takes them out. On the host backend, with the contents checked:
 *
 *  - under evict, three written tensors hold the budget: a fourth that
 *    needs their room fails with -ENOMEM, nothing evicted, nothing lost;
 *  - under delta, the same request offloads them, and every byte comes
 *    back;
 *  - evict again: they leave the index when the policy next reads its
 *    keys (a choice).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "policy/index.h"
#include "policy/policy_priv.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	4096
#define NP	3		/* written tensors, one chunk each */

static struct tp_ctx *ctx;
static struct tp_tensor *p[NP];

static size_t indexed(void)
{
	return tp_pol_index_count(ctx->policy->idx);
}

static void fill(uint32_t *w, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

/* Whether tensor @k still holds what was written to it. */
static bool intact(int k)
{
	uint32_t want[CHUNK / 4], got[CHUNK / 4];

	fill(want, CHUNK / 4, (uint32_t)k + 1);
	if (tp_tensor_read(ctx, p[k], 0, got, sizeof(got)))
		return false;
	return !memcmp(want, got, sizeof(got));
}

/* A tensor of two chunks (one more than is free), written. */
static int big_request(struct tp_tensor **out)
{
	return tops_request(ctx, 2 * CHUNK, out);
}

int main(void)
{
	struct tp_stats st;
	struct tp_tensor *q = NULL;
	bool all = true;
	int ret;

	plan_tests(10);
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=16K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.rescue=0,"
			    "pager.high_watermark=100,"
			    "policy.filter=lru,policy.director=evict");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	for (int k = 0; k < NP; k++) {
		uint32_t w[CHUNK / 4];

		p[k] = tp_tensor_create(ctx, CHUNK, 0);
		if (!p[k])
			bail_out("tp_tensor_create: %s", strerror(errno));
		fill(w, CHUNK / 4, (uint32_t)k + 1);
		if (tp_tensor_write(ctx, p[k], 0, w, sizeof(w)))
			bail_out("tp_tensor_write: %s", tp_last_error(ctx));
	}

	ok(indexed() == 0,
	   "evict: written tensors lineage cannot regenerate are no candidates (%zu indexed)",
	   indexed());
	ret = big_request(&q);
	ok(ret == -ENOMEM, "evict: a request that needs their room fails: %d (%s)",
	   ret, ret < 0 ? tp_strerror(ret) : "");
	tp_stats_get(ctx, &st);
	ok(st.evictions == 0 && st.offloads == 0,
	   "evict: nothing left (%llu evictions, %llu offloads)",
	   (unsigned long long)st.evictions, (unsigned long long)st.offloads);
	for (int k = 0; k < NP; k++)
		all &= intact(k);
	ok(all, "evict: every written byte is intact");

	ok(!tp_ctl_set(ctx, "policy.director", "delta"),
	   "policy.director = delta at run time");
	ret = big_request(&q);
	ok(!ret, "delta: the same request offloads them: %d", ret);
	tp_stats_get(ctx, &st);
	ok(st.offloads >= 1, "delta: %llu offloads",
	   (unsigned long long)st.offloads);
	all = true;
	for (int k = 0; k < NP; k++)
		all &= intact(k);
	ok(all, "delta: every byte comes back");

	ok(indexed() > 0, "delta: candidates again (%zu indexed)", indexed());

	/* The next choice syncs the policy with its keys. */
	tp_ctl_set(ctx, "policy.director", "evict");
	tp_policy_sync_conf(ctx->policy);
	ok(indexed() == 0, "evict again: none indexed (%zu)", indexed());
	if (q)
		tp_tensor_free(ctx, q);
	for (int k = 0; k < NP; k++)
		tp_tensor_free(ctx, p[k]);
	tp_ctx_destroy(ctx);
	return exit_status();
}
