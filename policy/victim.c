/* SPDX-License-Identifier: MIT */
/*
 * The victim callbacks the pager calls: candidates in and out, and
 * choose(), which takes the filter's best candidate (exact index or DTR's
 * sampling) and asks the director how it leaves.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "base/array.h"
#include "base/log.h"
#include "pager/pager.h"
#include "policy/policy_priv.h"
#include "vmm/vmm.h"

/* DTR's sampling: ignore tensors under 1% of the mean candidate size. */
#define TP_SAMPLE_SMALL_FRACTION 0.01
/* policy_ns is measured on one decision in this many. */
#define TP_POLICY_TIME_EVERY 16

/*
 * A tensor that could never leave is not a candidate at all: pinned
 * both ways, or one lineage cannot regenerate under a director that
 * never offloads it. Neither changes while it stays a candidate (flags
 * are set at creation; lineage never makes a tensor regenerable after
 * its op has ended); a new director offers the candidates again
 * (tp_policy_sync_conf()). The evict-only baselines otherwise met every
 * parameter first and set it aside at each choice (lru/evict on bert at
 * 16%: a third of the replay's time in the index).
 */
static bool never_leaves(struct tp_policy *pol, const struct tp_tensor *t)
{
	unsigned f = tp_pager_leave_flags(t);

	if ((f & TP_NO_PAGING) ||
	    ((f & TP_EVICT_PINNED) && (f & TP_OFFLOAD_PINNED)))
		return true;
	return tp_director_traits(tp_pol_director(pol))->evicts_only &&
	       !(f & TP_EVICT_PINNED) && !tp_policy_computable(pol, t);
}

static void make_key(struct tp_policy *pol, const struct tp_tensor *t,
		     struct tp_pol_key *key)
{
	double c = 0;

	switch (tp_filter_traits(pol->filter)->cost) {
	case TP_FILTER_COST_EVICTED:
		c = tp_policy_evict_cost(pol, t);
		break;
	case TP_FILTER_COST_RECOMPUTE:
		c = tp_policy_cost(pol, t);
		break;
	case TP_FILTER_COST_NONE:
		break;
	}

	tp_filter_key(pol->filter, t, c, key);
}

static void note_access(struct tp_policy *pol, const struct tp_tensor *t)
{
	if (t->last_access_ns > pol->access_clock)
		pol->access_clock = t->last_access_ns;
}

static void victim_del(void *priv, struct tp_tensor *t);

static void victim_add(void *priv, struct tp_tensor *t)
{
	struct tp_policy *pol = priv;
	struct tp_pol_key key;
	bool had;

	note_access(pol, t);
	if (never_leaves(pol, t)) {
		victim_del(priv, t);
		return;
	}
	had = tp_pol_index_has(pol->idx, t);
	if (had)
		pol->mem_sum -= tp_pol_index_key(pol->idx, (size_t)t->pol.idx)->m;
	make_key(pol, t, &key);
	if (tp_pol_index_add(pol->idx, t, &key)) {
		/* Not a candidate: it stays resident, which is safe. */
		tp_log(TP_LOG_WARN, "policy: no memory to index a candidate");
		return;
	}
	pol->mem_sum += key.m;
}

static void victim_del(void *priv, struct tp_tensor *t)
{
	struct tp_policy *pol = priv;

	if (!tp_pol_index_has(pol->idx, t))
		return;
	pol->mem_sum -= tp_pol_index_key(pol->idx, (size_t)t->pol.idx)->m;
	tp_pol_index_del(pol->idx, t);
	if (!tp_pol_index_count(pol->idx))
		pol->mem_sum = 0;	/* no drift from rounding */
}

static void victim_touch(void *priv, struct tp_tensor *t)
{
	struct tp_policy *pol = priv;

	note_access(pol, t);
	if (tp_pol_index_has(pol->idx, t))
		victim_add(priv, t);
}

void tp_policy_sync_conf(struct tp_policy *pol)
{
	int filter = tp_pol_filter(pol);
	int search = pol->conf->policy_search;
	int director = tp_pol_director(pol);

	/* Which tensors can never leave changed: never_leaves(). */
	if (director != pol->director) {
		bool was = tp_director_traits(pol->director)->evicts_only;

		pol->director = director;
		if (was != tp_director_traits(director)->evicts_only &&
		    pol->pager)
			tp_pager_offer_cands(pol->pager);
	}

	if (filter != pol->filter) {
		size_t n = tp_pol_index_slots(pol->idx);

		pol->filter = filter;
		pol->mem_sum = 0;
		for (size_t i = 0; i < n; i++) {
			struct tp_tensor *t = tp_pol_index_at(pol->idx, i);
			struct tp_pol_key key;

			if (!t)
				continue;
			make_key(pol, t, &key);
			/* Set keys with the tree off: one O(n) rebuild. */
			tp_pol_index_set_tree(pol->idx, false);
			tp_pol_index_set_key(pol->idx, i, &key);
			pol->mem_sum += key.m;
		}
		pol->search = -1;
	}
	if (search != pol->search) {
		pol->search = search;
		/* A filter that scores afresh keeps no tournament. */
		tp_pol_index_set_tree(pol->idx, search == TP_SEARCH_EXACT &&
				      tp_filter_traits(filter)->choice !=
				      TP_FILTER_CHOOSE_AFRESH);
	}
}

uint64_t tp_policy_rand(struct tp_policy *pol)
{
	/* xorshift64*: fast, and reproducible from tp_policy_seed() */
	pol->rng ^= pol->rng >> 12;
	pol->rng ^= pol->rng << 25;
	pol->rng ^= pol->rng >> 27;
	return pol->rng * 0x2545F4914F6CDD1Dull;
}

static bool beats(const struct tp_pol_key *a, double va,
		  const struct tp_pol_key *b, double vb)
{
	return va > vb || (va == vb && a->k > b->k);
}

/*
 * DTR's search approximation: the best of ceil(sqrt(N)) random
 * candidates, each keyed afresh (costs read now), skipping tensors under
 * 1% of the mean size unless every sample is that small.
 */
static struct tp_tensor *sample(struct tp_policy *pol, uint64_t now)
{
	size_t n = tp_pol_index_count(pol->idx);
	size_t slots = tp_pol_index_slots(pol->idx);
	size_t k = (size_t)ceil(sqrt((double)n));
	double small = TP_SAMPLE_SMALL_FRACTION * pol->mem_sum / (double)n;
	struct tp_pol_key best_key = { 0 }, any_key = { 0 };
	double best_v = -INFINITY, any_v = -INFINITY;
	struct tp_tensor *best = NULL, *any = NULL;

	if (!n)
		return NULL;
	/* Holes are at most half the slots: a draw hits a candidate with
	 * probability 1/2 or more. */
	for (size_t i = 0, draws = 0; i < k && draws < 64 * k; draws++) {
		size_t s = (size_t)(tp_policy_rand(pol) % slots);
		struct tp_tensor *t = tp_pol_index_at(pol->idx, s);
		struct tp_pol_key key;
		double v;

		if (!t)
			continue;
		i++;

		pol->scored++;
		make_key(pol, t, &key);
		tp_pol_index_set_key(pol->idx, s, &key);
		v = tp_filter_value(&key, now);
		if (!any || beats(&key, v, &any_key, any_v)) {
			any = t;
			any_key = key;
			any_v = v;
		}
		if (key.m < small)
			continue;
		if (!best || beats(&key, v, &best_key, best_v)) {
			best = t;
			best_key = key;
			best_v = v;
		}
	}
	return best ? best : any;
}

/*
 * The exact winner. Keys of cost-based filters hold the c_r they were
 * built with; when the winner's cost has changed it is re-keyed and the
 * search repeats. Costs that only rose since keying make keys upper
 * bounds, so a winner whose cost is current is the true maximum; costs
 * that fall are told through tp_policy_cost_changed().
 */
static struct tp_tensor *exact(struct tp_policy *pol, uint64_t now)
{
	size_t rekeys = tp_pol_index_count(pol->idx);
	struct tp_tensor *t;

	for (;;) {
		struct tp_pol_key key;
		size_t s;

		t = tp_pol_index_top(pol->idx, now);
		if (!t || !tp_filter_uses_cost(pol->filter) || !rekeys--)
			return t;
		s = (size_t)t->pol.idx;
		pol->scored++;
		make_key(pol, t, &key);
		if (key.c == tp_pol_index_key(pol->idx, s)->c)
			return t;
		pol->mem_sum += key.m - tp_pol_index_key(pol->idx, s)->m;
		tp_pol_index_set_key(pol->idx, s, &key);
	}
}

static int set_aside(struct tp_policy *pol, size_t n, struct tp_tensor *t)
{
	if (n == pol->skip_cap) {
		struct tp_pol_skip *s;

		s = tp_array_grow(pol->skip, &pol->skip_cap,
				  pol->skip_cap + 1, sizeof(*s), 16);
		if (!s)
			return -1;
		pol->skip = s;
	}
	pol->skip[n].t = t;
	pol->skip[n].key = *tp_pol_index_key(pol->idx, (size_t)t->pol.idx);
	victim_del(pol, t);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Whether the director's answer for @t may be carried out ahead of need
 * (see choose_ahead in pager/hooks.h).
 */
bool tp_policy_ahead_ok(struct tp_policy *pol, const struct tp_tensor *t,
			const struct tp_tensor *ahead_of, enum tp_leave how,
			const struct tp_director_in *in)
{
	uint64_t next;

	if (ahead_of)
		return tp_prefetch_used_after(pol->pf, t, ahead_of);
	/* An eviction ahead of need throws work away; one not used again
	 * that lineage can regenerate is free to a demand: no hurry. */
	if (how != TP_LEAVE_OFFLOAD || (in->no_reuse && in->computable))
		return false;
	/* Its next use, if known, leaves time for the way out, behind the
	 * copies already queued, and back. */
	next = tp_prefetch_next_use_ns(pol->pf, t);
	if (!next)
		return true;
	return (double)next >= (in->queued + tp_director_out_bytes(in) +
				in->m) / in->b + in->remap_ns;
}

/*
 * What leaving costs the step that waits for the room, ns: an eviction's
 * recompute (DTR's c_r, and for delta-overlap the remap of the evicted
 * ancestors it brings back), an offload's copy out behind those queued
 * (none of what the swap cache holds).
 */
double tp_policy_leave_cost(struct tp_policy *pol, enum tp_leave how,
			    const struct tp_director_in *in)
{
	double out = tp_director_out_bytes(in);

	if (how == TP_LEAVE_EVICT)
		return in->c_r + in->anc_remap_ns + in->remap_ns;
	/* All in the swap cache: its chunks wait for compute only. */
	if (out <= 0)
		return in->remap_ns;
	return (in->queued + out) / in->b + in->remap_ns;
}

/*
 * @max_cost: a demand that could wait for room on its way back takes only
 * a victim leaving for less (INFINITY: any).
 */
static int choose(struct tp_policy *pol, bool ahead,
		  const struct tp_tensor *ahead_of, size_t need_bytes,
		  bool no_offload, double max_cost, struct tp_tensor **victim,
		  enum tp_leave *how)
{
	/* Reading the clock costs as much as a decision: time one in
	 * TP_POLICY_TIME_EVERY and count it for all of them. */
	bool timed = !(pol->decisions % TP_POLICY_TIME_EVERY);
	uint64_t t0 = timed ? mono_ns() : 0, now, scored = pol->scored;
	enum tp_filter_choice choice;
	struct tp_tensor *t;
	size_t nskip = 0;
	int rc = -ENOENT;

	now = tp_policy_now(pol);
	/* A trial of policy.tune gone on too long: the keys' pair again. */
	(void)tp_tune_over(&pol->tune, now);
	tp_policy_sync_conf(pol);
	choice = tp_filter_traits(pol->filter)->choice;
	if (tp_planned_on(pol)) {
		struct tp_planned_ask pa = {
			.ahead = ahead, .ahead_of = ahead_of,
			.no_offload = no_offload, .max_cost = max_cost,
		};

		/* -ENOENT: the plan has no victim, the filter chooses. */
		rc = tp_planned_choose(pol, &pa, &t, how);
		if (rc != -ENOENT) {
			rc = rc == -EAGAIN ? -ENOENT : rc;
			goto out;
		}
	}
	/* Coop's window needs the pool's layout: only a contiguous pool. */
	if (choice == TP_FILTER_CHOOSE_WINDOW && pol->vmm &&
	    tp_vmm_pool_contiguous(pol->vmm)) {
		rc = tp_coop_choose(pol, need_bytes, no_offload, &t, how);
		if (!rc && (ahead || max_cost < INFINITY)) {
			struct tp_director_in in;

			tp_policy_director_in(pol, t, no_offload, &in);
			if (ahead ? !tp_policy_ahead_ok(pol, t, ahead_of, *how, &in) :
				    tp_policy_leave_cost(pol, *how, &in) >= max_cost)
				rc = -ENOENT;
		}
		goto out;
	}
	if (choice == TP_FILTER_CHOOSE_AFRESH) {
		struct tp_overlap_ask ask = {
			.ahead = ahead, .ahead_of = ahead_of,
			.no_offload = no_offload, .max_cost = max_cost,
		};

		rc = tp_overlap_choose(pol, &ask, now, &t, how);
		goto out;
	}
	for (;;) {
		struct tp_director_in in;

		t = pol->search == TP_SEARCH_SAMPLE ? sample(pol, now) :
						      exact(pol, now);
		if (!t)
			break;
		tp_policy_director_in(pol, t, no_offload, &in);
		if (tp_director_decide(tp_pol_director(pol), &in, how)) {
			/* The best does not qualify: nothing ahead of need,
			 * or waiting is cheaper. */
			if (ahead ? tp_policy_ahead_ok(pol, t, ahead_of, *how, &in) :
				    tp_policy_leave_cost(pol, *how, &in) < max_cost)
				rc = 0;
			break;
		}
		/* Cannot leave now (swap full, evict-only and uncomputable):
		 * the next candidate. */
		if (set_aside(pol, nskip, t))
			break;
		nskip++;
	}
	for (size_t i = 0; i < nskip; i++) {
		struct tp_pol_skip *s = &pol->skip[i];

		if (!tp_pol_index_add(pol->idx, s->t, &s->key))
			pol->mem_sum += s->key.m;
	}
out:
	/*
	 * A choice costs the candidates it scored (pager.work_limit): one
	 * that scores them all (overlap, coop) costs what it takes, and a
	 * request that chooses without end is stopped as soon, in time, as
	 * one whose choices sample or read an index.
	 */
	if (pol->pager &&
	    tp_pager_work(pol->pager, (unsigned)(pol->scored - scored),
			  !ahead))
		rc = -TP_EWORK;
	if (!rc) {
		*victim = t;
		/* thrash_penalty() in policy.c counts whole evictions */
		if (*how == TP_LEAVE_EVICT && !tp_pager_has_evicted(t))
			tp_prefetch_note_evicted(pol->pf, t);
		tp_prefetch_left(pol->pf, t);
		if (*how == TP_LEAVE_EVICT)
			pol->chose_evict++;
		else
			pol->chose_offload++;
	}
	pol->decisions++;
	if (timed)
		pol->decision_ns += (mono_ns() - t0) * TP_POLICY_TIME_EVERY;
	(void)need_bytes;
	return rc;
}

static int victim_choose(void *priv, size_t need_bytes, bool no_offload,
			 struct tp_tensor **victim, enum tp_leave *how)
{
	struct tp_policy *pol = priv;
	int rc = choose(pol, false, NULL, need_bytes, no_offload, INFINITY,
			victim, how);

	/*
	 * A pair on trial (policy.tune) that finds no victim for a demand
	 * where the keys' pair finds one (an evict-only pair and a tensor
	 * that can only be offloaded) would fail what the user asked: the
	 * trial ends there, and the keys' pair chooses.
	 */
	if (rc == -ENOENT && tp_tune_on_trial(&pol->tune)) {
		tp_tune_stop(&pol->tune);
		rc = choose(pol, false, NULL, need_bytes, no_offload, INFINITY,
			    victim, how);
		if (rc == -ENOENT)
			tp_tune_resume(&pol->tune);	/* no better: on */
	}
	return rc;
}

static int victim_choose_over_wait(void *priv, size_t need_bytes,
				   uint64_t wait_bytes, bool no_offload,
				   struct tp_tensor **victim,
				   enum tp_leave *how)
{
	struct tp_policy *pol = priv;
	double b = tp_bw_get(&pol->bw, pol->conf);

	return choose(pol, false, NULL, need_bytes, no_offload,
		      (double)wait_bytes / b, victim, how);
}

static int victim_choose_ahead(void *priv, const struct tp_tensor *ahead_of,
			       size_t need_bytes, bool no_offload,
			       struct tp_tensor **victim, enum tp_leave *how)
{
	return choose(priv, true, ahead_of, need_bytes, no_offload, INFINITY,
		      victim, how);
}

/*
 * The rest of the victim ops: the pager's notifications and questions,
 * answered by the policy's functions of policy.h (@priv is the policy).
 */
static void victim_copy_done(void *priv, bool d2h, uint64_t bytes,
			     uint64_t ns)
{
	tp_policy_copy_done(priv, bytes, ns);
}

static void victim_on_acquire(void *priv, struct tp_tensor *t)
{
	tp_policy_on_acquire(priv, t);
}

static void victim_forget(void *priv, struct tp_tensor *t)
{
	tp_policy_forget(priv, t);
}

static uint64_t victim_release_bytes(void *priv, uint64_t used,
				     uint64_t budget)
{
	return tp_policy_release_bytes(priv, used, budget);
}

static size_t victim_prefetch_pick(void *priv, struct tp_tensor **out,
				   size_t max)
{
	return tp_policy_prefetch_pick(priv, out, max);
}

static void victim_prefetch_done(void *priv, struct tp_tensor *t, bool ok)
{
	tp_policy_prefetch_done(priv, t, ok);
}

static size_t victim_writeback_pick(void *priv, struct tp_tensor **out,
				    size_t max)
{
	return tp_policy_writeback_pick(priv, out, max);
}

static bool victim_recompute_back(void *priv, const struct tp_tensor *t)
{
	return tp_policy_recompute_back(priv, t);
}

static bool victim_partial_evict(void *priv)
{
	return tp_policy_partial_evict(priv);
}

static bool victim_split(void *priv)
{
	return tp_policy_split(priv);
}

static bool victim_rows_offload(void *priv, const struct tp_tensor *t)
{
	return tp_policy_rows_offload(priv, t);
}

static bool victim_settle_on_free(void *priv)
{
	return tp_policy_settle_on_free(priv);
}

static bool victim_swaps(void *priv)
{
	struct tp_policy *pol = priv;

	return !tp_director_traits(tp_pol_director(pol))->evicts_only;
}

void tp_policy_victim_init(struct tp_policy *pol)
{
	pol->vops = (struct tp_victim_ops){
		.add = victim_add,
		.del = victim_del,
		.touch = victim_touch,
		.choose = victim_choose,
		.choose_ahead = victim_choose_ahead,
		.choose_over_wait = victim_choose_over_wait,
		.copy_done = victim_copy_done,
		.on_acquire = victim_on_acquire,
		.forget = victim_forget,
		.release_bytes = victim_release_bytes,
		.prefetch_pick = victim_prefetch_pick,
		.prefetch_done = victim_prefetch_done,
		.writeback_pick = victim_writeback_pick,
		.recompute_back = victim_recompute_back,
		.partial_evict = victim_partial_evict,
		.split = victim_split,
		.rows_offload = victim_rows_offload,
		.settle_on_free = victim_settle_on_free,
		.swaps = victim_swaps,
		.priv = pol,
	};
}

void tp_policy_victim_fini(struct tp_policy *pol)
{
	free(pol->skip);
	pol->skip = NULL;
	pol->skip_cap = 0;
	free(pol->ocand);
	free(pol->orank);
	pol->ocand = NULL;
	pol->orank = NULL;
	pol->ocand_cap = 0;
}
