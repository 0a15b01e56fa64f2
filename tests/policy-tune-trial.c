/* SPDX-License-Identifier: MIT */
/*
 * A pair policy.tune has on trial never fails what the keys' pair does:
 * on the host backend, with the contents checked, three written tensors
 * lineage cannot regenerate hold a 16 KiB budget; an evict-only pair on
 * trial (dtr/evict) finds no victim for a fourth that needs their room,
 * so the keys' pair chooses instead (an offload), the request succeeds,
 * every byte comes back, and the trial is over for the iteration. Giving
 * the trial up (a public call that failed for room, made once more by
 * tp_ctx_retry()) ends it once.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctl/conf.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "policy/policy_priv.h"
#include "tests/pager-util.h"
#include "tests/tap.h"

#define CHUNK	4096
#define NP	3		/* written tensors, one chunk each */

static struct tp_ctx *ctx;
static struct tp_tensor *p[NP];

/* Whether each written tensor holds its pattern still. */
static bool all_intact(void)
{
	unsigned char want[CHUNK], got[CHUNK];

	for (int k = 0; k < NP; k++) {
		pt_fill(want, CHUNK, (uint64_t)k + 1);
		if (tp_tensor_read(ctx, p[k], 0, got, CHUNK) ||
		    memcmp(want, got, CHUNK))
			return false;
	}
	return true;
}

/* Put the candidate @filter/@director on trial, as tune.c would. */
static bool on_trial(int filter, int director)
{
	struct tp_tune *tu = &ctx->policy->tune;

	for (unsigned c = 0; c < tp_tune_nr_pairs; c++)
		if (tp_tune_pairs[c].filter == filter &&
		    tp_tune_pairs[c].director == director) {
			tu->phase = TP_TUNE_TRY;
			tu->cand = (int)c;
			tu->aborted = false;	/* a new iteration's */
			tu->n = 0;
			tu->keys_ns = UINT64_MAX / 4;	/* no time bound */
			tp_policy_sync_conf(ctx->policy);
			return true;
		}
	return false;
}

int main(void)
{
	struct tp_stats st;
	struct tp_tensor *q = NULL;
	void *addr;
	int ret;

	plan_tests(6);
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=4K,"
			    "pager.budget=16K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.rescue=0,"
			    "pager.high_watermark=100,policy.tune=on");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	for (int k = 0; k < NP; k++) {
		unsigned char w[CHUNK];

		pt_fill(w, CHUNK, (uint64_t)k + 1);
		p[k] = tp_tensor_create(ctx, CHUNK, 0);
		if (!p[k] || tp_tensor_write(ctx, p[k], 0, w, CHUNK))
			bail_out("a written tensor: %s", tp_last_error(ctx));
	}

	ok(on_trial(TP_FILTER_DTR, TP_DIRECTOR_EVICT) &&
	   tp_pol_director(ctx->policy) == TP_DIRECTOR_EVICT,
	   "dtr/evict on trial");
	/*
	 * Through the pager, not the public calls: the victim choice alone
	 * must do it (tp_ctx_retry() would make the call again).
	 */
	q = tp_pager_tensor_new(ctx->pager, 2 * CHUNK, 0);
	if (!q)
		bail_out("tp_pager_tensor_new: %s", strerror(errno));
	ret = tp_pager_user_acquire(ctx->pager, q, 0, 2 * CHUNK, TP_WRITE,
				    &addr);
	if (!ret)
		tp_pager_release(ctx->pager, q, 0, 2 * CHUNK);
	tp_stats_get(ctx, &st);
	ok(!ret && st.offloads >= 1,
	   "a request only an offload makes room for succeeds: %d, %llu offloads",
	   ret, (unsigned long long)st.offloads);
	ok(!tp_tune_pair(&ctx->policy->tune) &&
	   tp_pol_director(ctx->policy) == TP_DIRECTOR_DELTA_OVERLAP,
	   "the trial is over: the keys' pair in force");
	ok(all_intact(), "every written byte comes back");

	on_trial(TP_FILTER_GREEDY, TP_DIRECTOR_EVICT);
	ok(tp_policy_tune_give_up(ctx->policy) &&
	   !tp_tune_pair(&ctx->policy->tune),
	   "a call that failed for room under a trial gives it up");
	ok(!tp_policy_tune_give_up(ctx->policy),
	   "once: with no trial on, nothing to give up, no retry");
	if (q)
		tp_tensor_free(ctx, q);
	for (int k = 0; k < NP; k++)
		tp_tensor_free(ctx, p[k]);
	tp_ctx_destroy(ctx);
	return exit_status();
}
