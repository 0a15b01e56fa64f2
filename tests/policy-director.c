/* SPDX-License-Identifier: MIT */
/*
 * The director: DELTA's decision F = c_r*b/m (eq. 4-6) flips from evict
 * to offload exactly where F crosses 1 (Alg. 3: evict iff F <= 1); the
 * pinning flags and uncomputable tensors decide first; a full host swap
 * falls back to evict or to the next candidate; the fixed directors; the
 * overlap-aware variant (TSPLIT eq. 3); and b following measured copies.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "ctx/ctx.h"
#include "policy/director.h"
#include "policy/policy.h"
#include "tap.h"
#include "tests/policy-testenv.h"

static void init_tensor(struct tp_tensor *t, uint64_t id, size_t bytes,
			uint64_t last, double c, unsigned flags)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->bytes = bytes;
	t->nr_pages = t->resident_pages = 1;
	t->last_access_ns = last;
	t->computable = !isinf(c);
	t->flags = flags;
	t->pol.idx = -1;
	cost[id] = c;
}

static struct tp_ctx ctx;
static struct tp_policy *pol;
static const struct tp_victim_ops *ops;

static void set(const char *key, const char *value)
{
	if (tp_conf_set(&ctx.conf, key, value, "test", 0))
		bail_out("cannot set %s=%s", key, value);
}

/* choose() with one candidate @t: 0 and how, or -ENOENT. */
static int choose_one(struct tp_tensor *t, bool no_offload,
		      enum tp_leave *how)
{
	struct tp_tensor *v = NULL;
	int rc;

	ops->add(ops->priv, t);
	rc = ops->choose(ops->priv, 1, no_offload, &v, how);
	ops->del(ops->priv, t);
	if (!rc && v != t)
		return -EINVAL;
	return rc;
}

static void flips(void)
{
	struct tp_tensor t;
	enum tp_leave how;
	double above = nextafter(1000.0, INFINITY);
	double below = nextafter(1000.0, 0);

	/* b = 40 GB/s * 0.25 = 10 bytes/ns exactly; m = 10000: F = c_r/1000 */
	set("policy.link_bandwidth", "40");
	set("policy.link_utilisation", "0.25");
	set("policy.director", "delta");
	now = 100;

	init_tensor(&t, 1, 10000, 0, 1000, 0);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "delta: F = 1000*10/10000 = 1 evicts (F <= 1)");
	cost[1] = above;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "delta: F just above 1 offloads");
	cost[1] = below;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "delta: F just below 1 evicts");

	/* The same through tp_director_f, from the formula. */
	{
		struct tp_director_in in = {
			.computable = true, .m = 10000, .c_r = 1000, .b = 10,
		};

		ok(tp_director_f(TP_DIRECTOR_DELTA, &in) == 1000 * 10 / 10000.0,
		   "tp_director_f is c_r*b/m");
	}

	/* b follows completed copies: 20000 bytes in 1000 ns is 20 B/ns, so
	 * F = c_r*20/10000 now crosses 1 at c_r = 500. */
	tp_policy_copy_done(pol, 20000, 1000);
	cost[1] = 500;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "measured b = 20: F(500) = 1 evicts");
	cost[1] = nextafter(500.0, INFINITY);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "measured b = 20: F just above 1 offloads");
}

static void flags(void)
{
	struct tp_tensor t;
	enum tp_leave how;

	set("policy.director", "delta");
	/* c_r tiny (F << 1) but TP_EVICT_PINNED: offload. */
	init_tensor(&t, 1, 10000, 0, 1, TP_EVICT_PINNED);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "TP_EVICT_PINNED offloads even when F < 1");
	ok(choose_one(&t, true, &how) == -ENOENT,
	   "TP_EVICT_PINNED with host swap full cannot leave");
	/* c_r huge (F >> 1) but TP_OFFLOAD_PINNED: evict. */
	init_tensor(&t, 1, 10000, 0, 1e12, TP_OFFLOAD_PINNED);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "TP_OFFLOAD_PINNED evicts even when F > 1");
	/* Uncomputable: offload. */
	init_tensor(&t, 1, 10000, 0, INFINITY, 0);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "uncomputable offloads");
	t.flags = TP_UNCOMPUTABLE;
	cost[1] = 1;	/* lineage says cheap, the flag says never */
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "TP_UNCOMPUTABLE offloads whatever lineage says");
	ok(choose_one(&t, true, &how) == -ENOENT,
	   "uncomputable with host swap full cannot leave");
	/* Host swap full: F > 1 falls back to evict. */
	init_tensor(&t, 1, 10000, 0, 1e9, 0);
	ok(choose_one(&t, true, &how) == 0 && how == TP_LEAVE_EVICT,
	   "host swap full: an offload decision becomes evict");
	/* Uncomputable and TP_OFFLOAD_PINNED: never a candidate. */
	init_tensor(&t, 1, 10000, 0, INFINITY, TP_OFFLOAD_PINNED);
	ok(choose_one(&t, false, &how) == -ENOENT,
	   "uncomputable and TP_OFFLOAD_PINNED cannot leave");
}

static void next_candidate(void)
{
	struct tp_tensor a, b, *v = NULL;
	enum tp_leave how;
	int rc;

	/* a is the filter's first choice (older) but uncomputable; swap is
	 * full, so the victim must be b, evicted; a stays a candidate. */
	set("policy.filter", "lru");
	set("policy.director", "delta");
	now = 1000;
	init_tensor(&a, 1, 10000, 10, INFINITY, 0);
	init_tensor(&b, 2, 10000, 20, 1e9, 0);
	ops->add(ops->priv, &a);
	ops->add(ops->priv, &b);
	rc = ops->choose(ops->priv, 1, true, &v, &how);
	ok(rc == 0 && v == &b && how == TP_LEAVE_EVICT,
	   "swap full: the uncomputable first choice is passed over");
	rc = ops->choose(ops->priv, 1, false, &v, &how);
	ok(rc == 0 && v == &a && how == TP_LEAVE_OFFLOAD,
	   "the passed-over tensor is still a candidate");
	ops->del(ops->priv, &a);
	ops->del(ops->priv, &b);
}

static void fixed(void)
{
	struct tp_tensor t;
	enum tp_leave how;

	set("policy.director", "evict");
	init_tensor(&t, 1, 10000, 0, 1e12, 0);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "evict director evicts an expensive tensor");
	init_tensor(&t, 1, 10000, 0, INFINITY, 0);
	ok(choose_one(&t, false, &how) == -ENOENT,
	   "evict director never offloads an uncomputable tensor");
	init_tensor(&t, 1, 10000, 0, 1, TP_EVICT_PINNED);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "evict director honours TP_EVICT_PINNED");

	set("policy.director", "offload");
	init_tensor(&t, 1, 10000, 0, 1, 0);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "offload director offloads a cheap tensor");
	ok(choose_one(&t, true, &how) == 0 && how == TP_LEAVE_EVICT,
	   "offload director with swap full evicts what it can");
	init_tensor(&t, 1, 10000, 0, 1e12, TP_OFFLOAD_PINNED);
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "offload director honours TP_OFFLOAD_PINNED");
}

static void overlap(void)
{
	struct tp_director_in in = {
		.computable = true, .m = 10000, .b = 10, .remap_ns = 0,
	};
	struct tp_tensor t;
	enum tp_leave how;

	/* TSPLIT eq. 3: c_s = max(m/b - 0, 0) + max(m/b - hide, 0). */
	in.hide_ns = 400;
	in.c_r = 1600;		/* c_s = 1000 + 600 */
	ok(tp_director_f(TP_DIRECTOR_DELTA_OVERLAP, &in) == 1,
	   "delta-overlap: F = c_r / (m/b + max(m/b - hide, 0)) = 1");
	ok(tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_EVICT, "delta-overlap: F = 1 evicts");
	in.c_r = nextafter(1600.0, INFINITY);
	ok(tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_OFFLOAD, "delta-overlap: just above offloads");
	/* A fully hidden reload leaves only the copy out: flips at 1000. */
	in.hide_ns = 5000;
	in.c_r = 1000;
	ok(tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_EVICT, "delta-overlap, hidden reload: F = 1 evicts");
	/* Remap cost is charged to both: (c_r + R) / (c_s + R). */
	in.remap_ns = 3000;
	in.c_r = 1001;
	ok(fabs(tp_director_f(TP_DIRECTOR_DELTA_OVERLAP, &in) -
		4001.0 / 4000.0) < 1e-15,
	   "delta-overlap: remap added to both sides");
	/* An eviction also maps again the evicted ancestors it regenerates:
	 * (c_r + A + R) / (c_s + R), 1000 + 600 against 1000 + 600. */
	in.remap_ns = 0;
	in.hide_ns = 400;
	in.c_r = 1000;
	in.anc_remap_ns = 600;
	ok(tp_director_f(TP_DIRECTOR_DELTA_OVERLAP, &in) == 1 &&
	   tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_EVICT,
	   "delta-overlap: ancestors' remap counted: F = 1 evicts");
	in.anc_remap_ns = 601;
	ok(tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_OFFLOAD,
	   "delta-overlap: one ns more of ancestors' remap offloads");
	in.anc_remap_ns = 0;
	/* The copy out waits behind those queued: 5000 bytes more. */
	in.remap_ns = 0;
	in.hide_ns = 400;
	in.queued = 5000;
	in.c_r = 2100;		/* c_s = (5000 + 10000)/10 + 600 */
	ok(tp_director_f(TP_DIRECTOR_DELTA_OVERLAP, &in) == 1 &&
	   tp_director_decide(TP_DIRECTOR_DELTA_OVERLAP, &in, &how) &&
	   how == TP_LEAVE_EVICT,
	   "delta-overlap: copies queued ahead count: F = 1 at c_r 2100");
	in.queued = 0;

	/* The swap cache holds 6000 of the 10000 bytes: 4000 go out. */
	in.cached = 6000;
	in.c_r = 1000;		/* c_s = 4000/10 + 600 */
	ok(tp_director_f(TP_DIRECTOR_DELTA_OVERLAP, &in) == 1 &&
	   tp_director_exposed_ns(&in, TP_LEAVE_OFFLOAD) == 1000,
	   "delta-overlap: only bytes the swap cache lacks are copied out");
	/* All of it cached: the offload costs its reload alone, and plain
	 * delta's swap cost m/b falls to nothing. */
	in.cached = 10000;
	in.c_r = 100;
	ok(tp_director_exposed_ns(&in, TP_LEAVE_OFFLOAD) == 600 &&
	   isinf(tp_director_f(TP_DIRECTOR_DELTA, &in)) &&
	   tp_director_decide(TP_DIRECTOR_DELTA, &in, &how) &&
	   how == TP_LEAVE_OFFLOAD,
	   "a tensor the swap cache holds whole offloads, even cheap to recompute");
	in.cached = 0;

	/* Through choose: no history (hide 0), policy.remap_ns = 500 per
	 * chunk, 2 chunks: F = (c_r + 1000) / (2000 + 1000). */
	set("policy.director", "delta-overlap");
	set("policy.remap_ns", "500");
	tp_policy_copy_done(pol, 0, 0);	/* ignored */
	init_tensor(&t, 1, 20000, 0, 2000, 0);
	t.nr_pages = t.resident_pages = 2;
	/* b is 20 here (measured in flips()): m/b = 1000 */
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "delta-overlap via choose: F = 3000/3000 evicts");
	cost[1] = 2001;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "delta-overlap via choose: F = 3001/3000 offloads");
	/* One evicted ancestor page: its remap (500) joins c_r. */
	cost[1] = 1600;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "delta-overlap via choose: F = 2600/3000 evicts");
	anc[1] = 1;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "delta-overlap via choose: an evicted ancestor page makes F = 3100/3000: offloads");
	/* DELTA's F = c_r*b/m knows no remap: 900*20/20000 = 0.9 evicts. */
	set("policy.director", "delta");
	cost[1] = 900;
	ok(choose_one(&t, false, &how) == 0 && how == TP_LEAVE_EVICT,
	   "delta via choose: the ancestor page changes nothing, F = 0.9 evicts");
	anc[1] = 0;
}

/*
 * choose_over_wait: a demand that could wait for @wait bytes to go out
 * takes the best candidate only if it leaves for less: an eviction's c_r
 * (plus remap), an offload's own copy out.
 */
static int over_wait(struct tp_tensor *t, uint64_t wait, enum tp_leave *how)
{
	struct tp_tensor *v = NULL;
	int rc;

	ops->add(ops->priv, t);
	rc = ops->choose_over_wait(ops->priv, 1, wait, false, &v, how);
	ops->del(ops->priv, t);
	if (!rc && v != t)
		return -EINVAL;
	return rc;
}

static void waits(void)
{
	struct tp_tensor t, *none = NULL;
	enum tp_leave how;

	/* b = 20 bytes/ns (measured in flips()): 20000 bytes wait 1000 ns */
	set("policy.director", "evict");
	set("policy.remap_ns", "0");
	init_tensor(&t, 1, 10000, 0, 999, 0);
	ok(over_wait(&t, 20000, &how) == 0 && how == TP_LEAVE_EVICT,
	   "over wait: c_r 999 < 1000 ns of wait evicts");
	cost[1] = 1000;
	ok(over_wait(&t, 20000, &how) == -ENOENT,
	   "over wait: c_r 1000 is not less: wait");
	set("policy.director", "offload");
	ok(over_wait(&t, 10000, &how) == -ENOENT,
	   "over wait: an offload waits its own copy (500 ns), not < 500");
	ok(over_wait(&t, 10002, &how) == 0 && how == TP_LEAVE_OFFLOAD,
	   "over wait: an offload whose copy is shorter than the wait goes");
	ok(ops->choose_over_wait(ops->priv, 1, 20000, false, &none, &how) ==
	   -ENOENT, "over wait: no candidate, wait");
}

static void recompute_back(void)
{
	struct tp_director_in in = {
		.computable = true, .m = 10000, .b = 10,
	};

	/* DELTA §5.5: recompute an offloaded tensor when c_r < reload. */
	in.c_r = 999;
	ok(tp_director_recompute_back(TP_DIRECTOR_DELTA, &in), "c_r 999 < reload 1000: recompute");
	in.c_r = 1000;
	ok(!tp_director_recompute_back(TP_DIRECTOR_DELTA, &in), "c_r 1000: reload");
	in.c_r = 1;
	in.hide_ns = 1000;
	ok(!tp_director_recompute_back(TP_DIRECTOR_DELTA, &in),
	   "a reload hidden by compute costs nothing: reload");
	in.hide_ns = 0;
	in.c_r = 1;
	ok(tp_director_recompute_back(TP_DIRECTOR_EVICT, &in) &&
	   !tp_director_recompute_back(TP_DIRECTOR_OFFLOAD, &in),
	   "the swap-only director reloads what is cheaper recomputed");
	/* delta-overlap: the ancestors' remap joins the recompute side. */
	in.c_r = 400;
	in.anc_remap_ns = 600;
	ok(!tp_director_recompute_back(TP_DIRECTOR_DELTA_OVERLAP, &in),
	   "delta-overlap: c_r 400 + ancestors' remap 600 is not < 1000: reload");
	in.anc_remap_ns = 599;
	ok(tp_director_recompute_back(TP_DIRECTOR_DELTA_OVERLAP, &in),
	   "delta-overlap: 400 + 599 < 1000: recompute");
	in.anc_remap_ns = 0;
	in.computable = false;
	ok(!tp_director_recompute_back(TP_DIRECTOR_DELTA, &in), "uncomputable: reload");
}

int main(void)
{
	plan_tests(6 + 8 + 2 + 6 + 13 + 5 + 7 + 2);
	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	pol = pt_policy(&ctx, true);
	ops = tp_policy_victim_ops(pol);

	flips();
	flags();
	next_candidate();
	fixed();
	overlap();
	recompute_back();
	waits();
	tp_policy_destroy(pol);
	return exit_status();
}
