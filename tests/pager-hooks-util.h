/* SPDX-License-Identifier: MIT */
/*
 * Victim and regeneration ops of the tests' own, for pager tests that
 * choose victims themselves: the candidates as the pager offers them, in
 * the order they came (pt_cands), and a regeneration that writes nothing
 * and counts itself (pt_regens).
 */
#ifndef TP_TESTS_PAGER_HOOKS_UTIL_H
#define TP_TESTS_PAGER_HOOKS_UTIL_H

#include "pager/pager_int.h"
#include "tests/tap.h"

static struct {
	struct tp_tensor *t[16];
	unsigned n;
} pt_cands;

static unsigned pt_regens;

static void pt_cand_add(void *priv, struct tp_tensor *t)
{
	if (pt_cands.n == sizeof(pt_cands.t) / sizeof(pt_cands.t[0]))
		bail_out("more candidates than the test keeps");
	pt_cands.t[pt_cands.n++] = t;
}

static void pt_cand_del(void *priv, struct tp_tensor *t)
{
	for (unsigned i = 0; i < pt_cands.n; i++)
		if (pt_cands.t[i] == t) {
			pt_cands.t[i] = pt_cands.t[--pt_cands.n];
			return;
		}
}

static void pt_cand_touch(void *priv, struct tp_tensor *t)
{
}

static bool pt_can_regen(void *priv, const struct tp_tensor *t)
{
	return true;
}

/* @priv: the pager. The pages come back written with nothing. */
static int pt_regen_blank(void *priv, struct tp_tensor *t)
{
	void *addr;
	int ret = tp_pager_acquire(priv, t, 0, t->bytes,
				   TP_WRITE | TP_ACQ_NO_REGEN, &addr);

	if (ret)
		return ret;
	pt_regens++;
	return tp_pager_release(priv, t, 0, t->bytes);
}

static bool pt_keep_on_free(void *priv, struct tp_tensor *t)
{
	return false;
}

/* Both ops set on @ctx's pager, the candidates and the count emptied. */
static inline void pt_hooks_set(struct tp_ctx *ctx,
				const struct tp_victim_ops *victim)
{
	static struct tp_regen_ops regen = {
		.can_regenerate = pt_can_regen, .regenerate = pt_regen_blank,
		.on_free = pt_keep_on_free,
	};

	pt_cands.n = 0;
	pt_regens = 0;
	tp_pager_set_victim_ops(ctx->pager, victim);
	regen.priv = ctx->pager;
	tp_pager_set_regen_ops(ctx->pager, &regen);
}

#endif
