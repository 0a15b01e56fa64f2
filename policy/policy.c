/* SPDX-License-Identifier: MIT */
/*
 * The policy object: configuration, costs, and the pager's notifications.
 *
 * One file, past the usual length: each of the pager's notifications
 * (an access, a free, an iteration's end) updates the same per-tensor
 * keys, clocks and measured bandwidth, private to the policy; the
 * filters, directors and victim choice live in files of their own.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "pager/pager.h"
#include "policy/policy_priv.h"
#include "vmm/vmm.h"

/* The op cost prior when lineage has not said (tpager.h: 1 µs). */
#define TP_POLICY_PRIOR_COST_NS 1000.0

/* The vmm's clock (tp_policy_set_clock()). */
static uint64_t vmm_now(void *priv)
{
	return tp_vmm_now_ns(priv);
}

/* The built-in default of the enum key @key, -1 if none. */
static int key_default(const char *key)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	int v;

	return k && !tp_conf_parse_value(k, k->def, &v) ? v : -1;
}

/* The pair policy.tune = auto tunes: the keys' defaults. */
static void tune_defaults(struct tp_policy *pol)
{
	pol->tune_auto.filter = key_default("policy.filter");
	pol->tune_auto.director = key_default("policy.director");
}

struct tp_policy *tp_policy_create(const struct tp_conf *conf,
				   struct tp_pager *pg, struct tp_vmm *vmm)
{
	struct tp_policy *pol;

	if (!conf) {
		errno = EINVAL;
		return NULL;
	}
	pol = calloc(1, sizeof(*pol));
	if (!pol)
		goto err;
	pol->pager = pg;
	pol->vmm = vmm;
	pol->conf = conf;
	if (vmm)
		tp_policy_set_clock(pol, vmm_now, vmm);
	pol->idx = tp_pol_index_create();
	if (!pol->idx)
		goto err_free;
	pol->pf = tp_prefetch_create();
	if (!pol->pf)
		goto err_index;
	pol->plan = tp_planned_create();
	if (!pol->plan)
		goto err_prefetch;
	tp_bw_init(&pol->bw, vmm ? vmm->link_bytes_per_ns : 0);
	pol->rng = 0x9E3779B97F4A7C15ull;
	pol->reload_hidden = 1;
	tp_wb_auto_init(&pol->wb_auto);
	tp_tune_init(&pol->tune);
	tune_defaults(pol);
	pol->filter = tp_pol_filter(pol);
	pol->director = tp_pol_director(pol);
	pol->search = -1;	/* sync_conf keeps the index for the search */
	tp_policy_sync_conf(pol);
	tp_policy_victim_init(pol);
	return pol;

err_prefetch:
	tp_prefetch_destroy(pol->pf);
err_index:
	tp_pol_index_destroy(pol->idx);
err_free:
	free(pol);
err:
	errno = ENOMEM;
	return NULL;
}

void tp_policy_destroy(struct tp_policy *pol)
{
	if (!pol)
		return;
	tp_policy_victim_fini(pol);
	tp_planned_destroy(pol->plan);
	tp_prefetch_destroy(pol->pf);
	tp_bw_destroy(&pol->bw);
	tp_pol_index_destroy(pol->idx);
	free(pol);
}

const struct tp_victim_ops *tp_policy_victim_ops(struct tp_policy *pol)
{
	return &pol->vops;
}

void tp_policy_set_cost_ops(struct tp_policy *pol,
			    const struct tp_cost_ops *ops)
{
	pol->has_cost = ops != NULL;
	if (ops)
		pol->cost = *ops;
	/* Keys built with the old costs are checked when they win. */
}

void tp_policy_set_clock(struct tp_policy *pol,
			 uint64_t (*now_ns)(void *priv), void *priv)
{
	pol->now_fn = now_ns;
	pol->now_priv = priv;
}

uint64_t tp_policy_now(struct tp_policy *pol)
{
	if (pol->now_fn)
		return pol->now_fn(pol->now_priv);
	return pol->access_clock;
}

/*
 * Whether @t should come back by rows rather than by a regeneration
 * (policy.regen_max): the op that made it read its own rows alone, as do
 * the ops of its kind that read it, which then take it back from host
 * swap a part's rows at a time; a regeneration holds that op's inputs
 * whole. Where they pass the key's share of the budget, the op that
 * wants @t could not hold its own operands beside them: the
 * regeneration thrashes or fails that op, and @t is lost.
 */
static bool regen_too_big(struct tp_policy *pol, const struct tp_tensor *t)
{
	bool by_rows;
	double bytes;

	/*
	 * The evict-only baselines keep their papers' rule, when the keys
	 * choose them: a pair on trial (policy.tune) keeps the keys' rule.
	 */
	if (!pol->pager || !pol->cost.regen_bytes ||
	    pol->conf->policy_regen_max >= 100 ||
	    tp_director_traits(pol->conf->policy_director)->evicts_only)
		return false;
	bytes = pol->cost.regen_bytes(pol->cost.priv, t, &by_rows);
	return by_rows && bytes > (double)tp_pager_budget_bytes(pol->pager) *
				  pol->conf->policy_regen_max / 100.0;
}

bool tp_policy_computable(struct tp_policy *pol, const struct tp_tensor *t)
{
	/* Scratch comes back unwritten: "recomputed" for nothing. */
	if (t->flags & TP_SCRATCH)
		return true;
	if (t->flags & TP_UNCOMPUTABLE)
		return false;
	if (pol->has_cost && pol->cost.computable)
		return pol->cost.computable(pol->cost.priv, t) &&
		       !regen_too_big(pol, t);
	return t->computable;
}

/*
 * The rows of @t an op in parts has read leave as @t would whole: for
 * host swap where its regeneration is too big (policy.regen_max), so
 * that a later reader takes it back by rows.
 */
bool tp_policy_rows_offload(struct tp_policy *pol, const struct tp_tensor *t)
{
	return regen_too_big(pol, t);
}

/* Whether a replay the regeneration under way is to run reads @t. */
static bool regen_reads(struct tp_policy *pol, const struct tp_tensor *t)
{
	return pol->has_cost && pol->cost.regen_reads &&
	       pol->cost.regen_reads(pol->cost.priv, t);
}

/* Whether a regeneration in progress will read @t (tp_cost_ops). */
static bool regen_needs(struct tp_policy *pol, const struct tp_tensor *t)
{
	return pol->has_cost && pol->cost.regen_needs &&
	       pol->cost.regen_needs(pol->cost.priv, t);
}

/* The earliest predicted use of the tensors made from one. */
struct first_use {
	struct tp_policy *pol;
	uint64_t next, reuse;
};

static void note_use(void *priv, const struct tp_tensor *o)
{
	struct first_use *f = priv;
	uint64_t next, reuse;

	tp_prefetch_uses(f->pol->pf, o, &next, &reuse);
	if (reuse && reuse < f->reuse) {
		f->reuse = reuse;
		f->next = next;
	}
}

/*
 * When a regeneration may next read @t, which the program does not use
 * again: at the earliest predicted use of a tensor made from it, should
 * that one have left by then. UINT64_MAX: none used again.
 */
static void regen_next_use(struct tp_policy *pol, const struct tp_tensor *t,
			   uint64_t *next, uint64_t *reuse)
{
	struct first_use f = { pol, UINT64_MAX, UINT64_MAX };

	if (pol->has_cost && pol->cost.made_from)
		pol->cost.made_from(pol->cost.priv, t, note_use, &f);
	*next = f.next;
	*reuse = f.reuse;
}

/*
 * The regenerations whose cost is known without lineage's: none (INFINITY)
 * and none owed more (0). Return whether @t is one, its cost in *@c.
 */
static bool regen_settled(struct tp_policy *pol, const struct tp_tensor *t,
			  double *c)
{
	if (!tp_policy_computable(pol, t)) {
		*c = INFINITY;
		return true;
	}
	/*
	 * Part of it evicted, part resident (policy.partial_evict): its
	 * regeneration is owed already, and leaving more of it adds no
	 * recompute. A tensor evicted whole keeps its cost: the question
	 * asked of it is where it goes back (Coop's placement) or whether
	 * it comes back by recompute.
	 */
	*c = 0;
	return (tp_pager_has_evicted(t) && t->resident_pages) ||
	       (t->flags & TP_SCRATCH);
}

double tp_policy_regen_cost(struct tp_policy *pol, const struct tp_tensor *t,
			    size_t *anc_pages)
{
	double c;

	*anc_pages = 0;
	if (regen_settled(pol, t, &c))
		return c;
	if (pol->has_cost && pol->cost.recompute_ns)
		return pol->cost.recompute_ns(pol->cost.priv, t, anc_pages);
	return TP_POLICY_PRIOR_COST_NS;
}

double tp_policy_regen_floor(struct tp_policy *pol, const struct tp_tensor *t)
{
	double c;

	/* tp_policy_regen_cost()'s cases, the walk left out. */
	if (regen_settled(pol, t, &c))
		return c;
	if (pol->has_cost && pol->cost.recompute_ns)
		return pol->cost.own_ns ? pol->cost.own_ns(pol->cost.priv, t) :
					  0;
	return TP_POLICY_PRIOR_COST_NS;
}

double tp_policy_cost(struct tp_policy *pol, const struct tp_tensor *t)
{
	size_t anc_pages;

	return tp_policy_regen_cost(pol, t, &anc_pages);
}

double tp_policy_evict_cost(struct tp_policy *pol, const struct tp_tensor *t)
{
	double c = tp_policy_cost(pol, t);

	/* Owed already (partly evicted), or cannot come back. */
	if (c <= 0 || isinf(c) || !pol->has_cost || !pol->cost.evict_ns)
		return c;
	return pol->cost.evict_ns(pol->cost.priv, t);
}

/*
 * Remap cost of @pages pages (unmap now, map and set access when they come
 * back): policy.remap_ns a chunk; else what the vmm measured a handle of
 * them cost (the driver charges per handle, whatever its size), or its
 * backend's model of the driver (the sim's profiles); else the configured
 * sim costs per chunk (the sim backend's calls take no host time, so its
 * configured costs are what it charges).
 */
double tp_policy_remap_ns(struct tp_policy *pol, size_t pages)
{
	const struct tp_conf *c = pol->conf;
	struct tp_vmm *vmm = pol->vmm;
	double ns;

	if (c->policy_remap_ns >= 0)
		return (double)c->policy_remap_ns * (double)pages;
	if (vmm) {
		ns = tp_vmm_remap_ns(vmm, pages,
				     c->vmm_backend != TP_VMM_SIM &&
				     c->policy_costs == TP_COSTS_MEASURED);
		if (ns >= 0)
			return ns;
	}
	/* The sim charges its costs per vmm.sim.driver_granule when set. */
	return (double)pages *
	       (double)(c->vmm_sim_map_ns + c->vmm_sim_set_access_ns +
			c->vmm_sim_unmap_ns) *
	       (c->vmm_sim_driver_granule ?
		(double)(vmm && vmm->granularity ? vmm->granularity :
			 c->vmm_chunk_size) /
		(double)c->vmm_sim_driver_granule : 1.0);
}

bool tp_policy_remap_per_handle(const struct tp_policy *pol)
{
	const struct tp_conf *c = pol->conf;

	/* tp_policy_remap_ns()'s cases: the keys' cost is per chunk. */
	return c->policy_remap_ns < 0 && pol->vmm &&
	       tp_vmm_remap_ns(pol->vmm, 1,
			       c->vmm_backend != TP_VMM_SIM &&
			       c->policy_costs == TP_COSTS_MEASURED) >= 0;
}

static double remap_one(void *priv, size_t pages)
{
	return tp_policy_remap_ns(priv, pages);
}

static uint64_t chunk_bytes(struct tp_policy *pol)
{
	if (pol->vmm && pol->vmm->granularity)
		return pol->vmm->granularity;
	return pol->conf->vmm_chunk_size;
}

/*
 * What compute hides of a reload due in @gap ns (UINT64_MAX: never), for
 * a prefetch that is issued in time. TSPLIT eq. 3: sum over ops of
 * (1 - Oc_u) * T_u, with the link's mean occupancy over the last
 * iteration as Oc.
 */
static double hidden_ns(struct tp_policy *pol, uint64_t gap)
{
	if (gap == UINT64_MAX)
		return INFINITY;
	return (1 - tp_bw_occupancy(&pol->bw)) * (double)gap;
}

/*
 * The same for a tensor leaving now, whose reload is hidden only if the
 * prefetch finds room in time: eq. 3's overlap scaled by the fraction of
 * the last iteration's reloads that a prefetch hid. A budget so tight
 * that prefetches find no room charges reloads in full, as they are.
 */
static double leave_hidden_ns(struct tp_policy *pol, uint64_t gap)
{
	double h = hidden_ns(pol, gap);

	return isinf(h) ? h : pol->reload_hidden * h;
}

double tp_policy_out_backlog(struct tp_policy *pol)
{
	return pol->pager ?
	       (double)tp_pager_copy_backlog(pol->pager, true) : 0;
}

/* director_in_base() but for c_r and the ancestors' remap (c_r NAN). */
static void director_in_cheap(struct tp_policy *pol, const struct tp_tensor *t,
			      bool no_offload, struct tp_director_in *in)
{
	in->flags = tp_pager_leave_flags(t);
	in->computable = tp_policy_computable(pol, t);
	in->m = tp_filter_mem(t);
	in->cached = (double)t->cached_pages * (double)chunk_bytes(pol);
	in->c_r = NAN;
	in->b = tp_bw_get(&pol->bw, pol->conf);
	in->remap_ns = tp_policy_remap_ns(pol, t->resident_pages);
	in->anc_remap_ns = 0;
	in->no_offload = no_offload;
	in->hide_ns = 0;
	in->queued = 0;
	in->ahead = false;
	in->no_reuse = false;
	in->reuse_ns = 0;
}

/* c_r, walking the evicted ancestry, and the remap of what it counts. */
static void director_in_regen(struct tp_policy *pol, const struct tp_tensor *t,
			      struct tp_director_in *in)
{
	size_t anc_pages = 0;

	in->c_r = in->computable ? tp_policy_regen_cost(pol, t, &anc_pages) :
				   INFINITY;
	/* Only delta-overlap's cost model counts it (the papers' do not). */
	in->anc_remap_ns = tp_director_traits(tp_pol_director(pol))->
			   overlap ? tp_policy_remap_ns(pol, anc_pages) : 0;
}

/* The director's input without the overlap estimate (hide_ns = 0). */
static void director_in_base(struct tp_policy *pol, const struct tp_tensor *t,
			     bool no_offload, struct tp_director_in *in)
{
	director_in_cheap(pol, t, no_offload, in);
	director_in_regen(pol, t, in);
}

/* The resident ancestor @y is done with before the step asked about. */
struct gone_before {
	struct tp_policy *pol;
	uint64_t stamp;		/* tp_prefetch_stamp() now */
	int64_t step;
};

static bool gone_before(void *priv, const struct tp_tensor *y)
{
	struct gone_before *g = priv;
	struct tp_tensor *w = (struct tp_tensor *)y;
	int64_t last;

	/* One choice scores every candidate: each ancestor's last use is
	 * looked up once while the cursor stays. */
	if (w->pol.memo_stamp != g->stamp) {
		w->pol.memo = tp_prefetch_last_step(g->pol->pf, y);
		w->pol.memo_stamp = g->stamp;
	}
	last = w->pol.memo;
	return last == INT32_MIN || (last >= 0 && last < g->step);
}

/*
 * What evicting @t now costs when it is next used, as the record
 * predicts that use: the ancestors the program frees before it are
 * gone by then, and the regeneration replays them too (a gradient
 * evicted in the backward pass and read by the optimizer replays the
 * forward pass that made it). c_r counts only the ancestors evicted now.
 */
static void project_cost(struct tp_policy *pol, const struct tp_tensor *t,
			 struct tp_director_in *in)
{
	struct gone_before g = { .pol = pol };
	size_t anc_pages = 0;
	double c;

	if (!in->computable || in->c_r <= 0 || isinf(in->c_r) ||
	    !pol->has_cost || !pol->cost.projected_ns)
		return;
	g.step = tp_prefetch_next_step(pol->pf, t);
	if (g.step < 0 || g.step == INT32_MAX)
		return;
	g.stamp = tp_prefetch_stamp(pol->pf);
	c = pol->cost.projected_ns(pol->cost.priv, t, gone_before, &g,
				   &anc_pages);
	if (c <= in->c_r)
		return;
	in->c_r = c;
	if (tp_director_traits(tp_pol_director(pol))->overlap)
		in->anc_remap_ns = tp_policy_remap_ns(pol, anc_pages);
}

/*
 * A tensor evicted and brought back in this iteration that would be
 * evicted again is thrashing: each time costs its regeneration once
 * more, so each comeback counts (MegEngine's DTR, section 3.6: a
 * penalty for the recalculations of the same tensor). The director then
 * offloads it, and the filter prefers another, for the rest of the
 * iteration.
 */
static void thrash_penalty(struct tp_policy *pol, const struct tp_tensor *t,
			   struct tp_director_in *in)
{
	unsigned k;

	if (!in->computable || in->c_r <= 0 || isinf(in->c_r))
		return;
	k = tp_prefetch_evictions(pol->pf, t);
	if (k)
		in->c_r *= 1 + k;
}

/* Whether the director or the filter reads the last iteration's record. */
static bool reads_record(const struct tp_policy *pol)
{
	return tp_director_traits(tp_pol_director(pol))->overlap ||
	       tp_filter_traits(tp_pol_filter(pol))->next_use;
}

void tp_policy_director_in_begin(struct tp_policy *pol,
				 const struct tp_tensor *t, bool no_offload,
				 struct tp_director_in *in, uint64_t *next_out)
{
	pol->scored++;
	director_in_cheap(pol, t, no_offload, in);
	*next_out = 0;
	/* The ahead-of-need check and the wait comparison read it too. */
	in->queued = tp_policy_out_backlog(pol);
	if (reads_record(pol)) {
		uint64_t next, reuse;

		tp_prefetch_uses(pol->pf, t, &next, &reuse);
		/*
		 * The record says no one uses it again, but a regeneration
		 * under way will: a use the record knows nothing of, not a
		 * free way out (lineage/regen.c, mark_needed()). Nor is it
		 * free when iterations that thrashed regenerated it after
		 * the program's last use (tp_prefetch_regen_late()): its
		 * next use is then the earliest of the tensors made from it,
		 * whose regeneration would read it (regen_next_use()). Taken
		 * as free, it left, the tensors made from it then cost its
		 * regeneration too, and iterations alternated (DTR's
		 * ResNet-32 log at 10% of its peak after warm-up: 53% extra
		 * time, then 206%, in turn).
		 */
		/*
		 * A replay waiting on the walk under way reads it next: sent
		 * away now, it would be regenerated again within the same
		 * request (DTR's ResNet-32 log at 12%: 332 of 725 victims,
		 * some sent away 11 times in the iteration). What the walk
		 * met and may read again later is the next case.
		 */
		if (regen_reads(pol, t))
			next = reuse = 1;
		else if (reuse == UINT64_MAX && regen_needs(pol, t))
			next = reuse = 0;
		else if (reuse == UINT64_MAX &&
			 tp_prefetch_regen_late(pol->pf, t))
			regen_next_use(pol, t, &next, &reuse);
		in->hide_ns = leave_hidden_ns(pol, next);
		in->no_reuse = reuse == UINT64_MAX;
		in->reuse_ns = (double)reuse;
		*next_out = next;
	}
}

void tp_policy_director_in_cost(struct tp_policy *pol,
				const struct tp_tensor *t,
				struct tp_director_in *in, uint64_t next)
{
	director_in_regen(pol, t, in);
	if (reads_record(pol)) {
		if (!in->no_reuse && next && next != UINT64_MAX)
			project_cost(pol, t, in);
		thrash_penalty(pol, t, in);
	}
}

void tp_policy_director_in(struct tp_policy *pol, const struct tp_tensor *t,
			   bool no_offload, struct tp_director_in *in)
{
	uint64_t next;

	tp_policy_director_in_begin(pol, t, no_offload, in, &next);
	tp_policy_director_in_cost(pol, t, in, next);
}

void tp_policy_cost_changed(struct tp_policy *pol, struct tp_tensor *t)
{
	if (pol->vops.touch && tp_pol_index_has(pol->idx, t))
		pol->vops.touch(pol, t);
}

void tp_policy_copy_done(struct tp_policy *pol, uint64_t bytes, uint64_t ns)
{
	tp_bw_sample(&pol->bw, bytes, ns);
}

uint64_t tp_policy_release_bytes(struct tp_policy *pol, uint64_t used,
				 uint64_t budget)
{
	uint64_t planned;

	if (tp_planned_release_bytes(pol, &planned))
		return planned;
	/*
	 * The overlap filter releases at demand only. Its demand victims
	 * are what is not used again (free) and what is cheapest to have
	 * back, so a release ahead only moves what a demand would not:
	 * every offload ahead of need measured on tpager-sim cost more in
	 * remaps, link time and late reloads than it hid.
	 */
	if (tp_filter_traits(tp_pol_filter(pol))->demand_only)
		return 0;
	/*
	 * An evict-only director (the DTR, LRU, GREEDY and Coop baselines)
	 * releases at demand, as their papers do: ahead of need only an
	 * offload qualifies, and it offloads only what the user pinned
	 * against eviction. Asked anyway, each allocation above the
	 * watermark scored every candidate for nothing (coop/evict on DTR's
	 * Inception-v4 log at 45%: 1283 of 1500 choices).
	 */
	if (tp_director_traits(tp_pol_director(pol))->demand_only)
		return 0;
	return tp_watermark_release(&pol->wm, pol->conf->pager_high_watermark,
				    pol->conf->pager_low_watermark, used,
				    budget);
}

/*
 * The prefetcher's clock: time less what paging lost (stalls and
 * recomputes), so that the record of an iteration that paged hard still
 * predicts the compute between two uses, which is all the next
 * iteration's reloads can hide behind.
 */
static uint64_t work_now(struct tp_policy *pol)
{
	uint64_t now = tp_policy_now(pol), lost = 0;

	if (pol->pager)
		lost = tp_pager_lost_ns(pol->pager);
	now = now > lost ? now - lost : 0;
	if (now < pol->work_clock)
		now = pol->work_clock;	/* a cost noted before it ran */
	pol->work_clock = now;
	return now;
}

/*
 * The clock once the compute issued so far has run: a timed iteration
 * (policy.writeback = auto, policy.tune) is measured from the end of the
 * work before it to the end of its own, waits included.
 */
static uint64_t settled_now(struct tp_policy *pol)
{
	if (pol->vmm) {
		tp_vmm_wait_why("a timed iteration's end");
		(void)tp_vmm_stream_sync(pol->vmm, TP_STREAM_COMPUTE);
	}
	return tp_policy_now(pol);
}

/*
 * policy.tune in force: not beside a plan, which chooses by its own
 * model, nor beside policy.writeback = auto's trials, which time the
 * same iterations.
 */
static bool tune_on(const struct tp_policy *pol)
{
	const struct tp_conf *c = pol->conf;

	if (!pol->pager || c->policy_plan != TP_PLAN_KIND_OFF ||
	    c->policy_writeback == TP_WRITEBACK_AUTO)
		return false;
	return c->policy_tune == TP_TUNE_KIND_ON ||
	       (c->policy_tune == TP_TUNE_KIND_AUTO &&
		c->policy_filter == pol->tune_auto.filter &&
		c->policy_director == pol->tune_auto.director);
}

static void tune_begin(struct tp_policy *pol)
{
	struct tp_tune_pair keys = {
		pol->conf->policy_filter, pol->conf->policy_director,
	};

	if (tp_tune_begin(&pol->tune, tune_on(pol), keys,
			  pol->pager ? tp_pager_budget_bytes(pol->pager) : 0,
			  tp_policy_now(pol)))
		tp_tune_timed(&pol->tune, settled_now(pol));
	/* the pair kept resumes in the state it was timed in */
	(void)tp_tune_restore(&pol->tune, &pol->reload_hidden);
	pol->tune_chose = pol->chose_evict + pol->chose_offload;
	pol->tune_offloaded = pol->chose_offload;
	tp_policy_sync_conf(pol);
}

static void tune_end(struct tp_policy *pol)
{
	uint64_t now = tp_tune_timing(&pol->tune) ? settled_now(pol) :
						     tp_policy_now(pol);

	tp_tune_end(&pol->tune, now,
		    pol->chose_evict + pol->chose_offload != pol->tune_chose,
		    pol->chose_offload != pol->tune_offloaded,
		    pol->reload_hidden);
}

void tp_policy_iteration_begin(struct tp_policy *pol)
{
	tune_begin(pol);
	tp_bw_iteration_begin(&pol->bw, tp_policy_now(pol));
	tp_prefetch_iteration_begin(pol->pf, work_now(pol));
	tp_planned_iteration_begin(pol);
	if (pol->pager) {
		tp_pager_reload_counts(pol->pager, &pol->iter_reloads,
				       &pol->iter_in_time);
		pol->iter_compute = tp_pager_compute_ns(pol->pager);
		pol->iter_recompute = tp_pager_recompute_ns(pol->pager);
	}
	if (pol->conf->policy_writeback == TP_WRITEBACK_AUTO &&
	    tp_wb_auto_begin(&pol->wb_auto, tp_prefetch_predicting(pol->pf),
			     tp_policy_now(pol)))
		tp_wb_auto_timed(&pol->wb_auto, settled_now(pol));
}

bool tp_policy_tune_give_up(struct tp_policy *pol)
{
	if (!pol || !tp_tune_on_trial(&pol->tune))
		return false;
	tp_tune_stop(&pol->tune);
	tp_policy_sync_conf(pol);
	return true;
}

void tp_policy_iteration_end(struct tp_policy *pol)
{
	bool predicted = tp_prefetch_predicting(pol->pf);
	uint64_t reloads, in_time;

	if (pol->conf->policy_writeback == TP_WRITEBACK_AUTO)
		tp_wb_auto_end(&pol->wb_auto,
			       tp_wb_auto_timing(&pol->wb_auto) ?
			       settled_now(pol) : tp_policy_now(pol));
	tp_bw_iteration_end(&pol->bw, tp_policy_now(pol));
	if (pol->pager)
		tp_prefetch_thrashed(pol->pf,
				     tp_pager_recompute_ns(pol->pager) -
				     pol->iter_recompute >
				     tp_pager_compute_ns(pol->pager) -
				     pol->iter_compute);
	tp_prefetch_iteration_end(pol->pf, work_now(pol));
	tp_planned_iteration_end(pol);
	/*
	 * An iteration that reloaded nothing tells nothing new, and one
	 * with no record (the first) could not prefetch: its reloads say
	 * nothing of how well a prefetch hides them.
	 */
	if (pol->pager && predicted) {
		tp_pager_reload_counts(pol->pager, &reloads, &in_time);
		if (reloads > pol->iter_reloads)
			pol->reload_hidden =
				(double)(in_time - pol->iter_in_time) /
				(double)(reloads - pol->iter_reloads);
		if (pol->reload_hidden > 1)
			pol->reload_hidden = 1;
	}
	tune_end(pol);
}

void tp_policy_on_acquire(struct tp_policy *pol, struct tp_tensor *t)
{
	if (t->last_access_ns > pol->access_clock)
		pol->access_clock = t->last_access_ns;
	/* -ENOMEM only loses a prediction. */
	(void)tp_prefetch_on_acquire(pol->pf, t, work_now(pol),
				     pol->pager ?
				     tp_pager_compute_ns(pol->pager) : 0,
				     pol->pager &&
				     tp_pager_replaying(pol->pager));
	tp_coop_place(pol, t);
}

/* A reload is worth it unless recomputing is cheaper (DELTA §5.5). */
static bool want_reload(void *priv, struct tp_tensor *t, uint64_t next_use_ns)
{
	struct tp_policy *pol = priv;
	struct tp_director_in in;

	director_in_base(pol, t, false, &in);
	/* m(t) of the pages to bring back, not of those still resident */
	in.m = (double)t->bytes - in.m;
	in.hide_ns = hidden_ns(pol, next_use_ns);
	return !tp_director_recompute_back(tp_pol_director(pol), &in);
}

size_t tp_policy_prefetch_pick(struct tp_policy *pol, struct tp_tensor **out,
			       size_t max)
{
	const struct tp_conf *c = pol->conf;
	struct tp_prefetch_room room = {
		.chunk = chunk_bytes(pol),
		.bytes_per_ns = tp_bw_get(&pol->bw, c),
		.remap_ns = remap_one,
		.remap_priv = pol,
	};

	/*
	 * Each tensor comes back when due, free chunks or not: the pager
	 * makes room from tensors predicted to be used after it
	 * (choose_ahead); one it finds no room for is answered not done.
	 * Free memory is no reason to come back early: the work before the
	 * use may need it.
	 */
	if (!c->policy_prefetch)
		return 0;
	return tp_prefetch_pick(pol->pf, out, max,
				(unsigned)c->policy_prefetch_depth, &room,
				want_reload, pol);
}

/* policy.writeback on, or auto and on for the iteration under way. */
static bool writeback_on(const struct tp_policy *pol)
{
	switch (pol->conf->policy_writeback) {
	case TP_WRITEBACK_ON:
		return true;
	case TP_WRITEBACK_AUTO:
		return tp_wb_auto_on(&pol->wb_auto);
	default:
		return false;
	}
}

/* Below this fraction of reloads hidden, a copy ahead saves nothing. */
#define TP_WRITEBACK_MIN_HIDDEN 0.5

/*
 * The writeback's choice (policy.writeback): above pager.low_watermark,
 * the resident candidate whose next use is farthest, of those whose copy
 * out and back both fit before it and that the swap cache does not hold
 * whole. Farthest first is Belady's order: it is what the overlap filter
 * and the director's offload ahead of need send away first, and what a
 * reload has the most compute to hide behind. Not one the record says is
 * done with: dropping it is free already.
 */
size_t tp_policy_writeback_pick(struct tp_policy *pol, struct tp_tensor **out,
				size_t max)
{
	const struct tp_conf *c = pol->conf;
	struct tp_pager *pg = pol->pager;
	size_t slots = tp_pol_index_slots(pol->idx);
	uint64_t now = tp_policy_now(pol);
	struct tp_tensor *best = NULL;
	double best_d = 0, best_m = 0, b;

	if (!writeback_on(pol) || !max || !pg ||
	    pol->reload_hidden < TP_WRITEBACK_MIN_HIDDEN ||
	    (double)tp_pager_used_bytes(pg) * 100 <=
	    c->pager_low_watermark * (double)tp_pager_budget_bytes(pg))
		return 0;
	b = tp_bw_get(&pol->bw, c);
	for (size_t i = 0; i < slots; i++) {
		struct tp_tensor *t = tp_pol_index_at(pol->idx, i);
		uint64_t next, reuse;
		double d, m;

		if (!t || t->cached_pages >= t->resident_pages ||
		    (t->flags & (TP_OFFLOAD_PINNED | TP_NO_PAGING)))
			continue;
		tp_prefetch_uses(pol->pf, t, &next, &reuse);
		if (reuse == UINT64_MAX)
			continue;
		m = tp_filter_mem(t);
		d = tp_policy_distance(t, (double)reuse, now);
		if (next && next != UINT64_MAX && (double)next < 2 * m / b)
			continue;
		if (d > best_d || (d == best_d && m > best_m)) {
			best = t;
			best_d = d;
			best_m = m;
		}
	}
	if (!best)
		return 0;
	out[0] = best;
	return 1;
}

bool tp_policy_used_after(struct tp_policy *pol, const struct tp_tensor *v,
			  const struct tp_tensor *t)
{
	return tp_prefetch_used_after(pol->pf, v, t);
}

void tp_policy_prefetch_done(struct tp_policy *pol, struct tp_tensor *t,
			     bool ok)
{
	tp_prefetch_done(pol->pf, t, ok);
}

bool tp_policy_partial_evict(const struct tp_policy *pol)
{
	switch (pol->conf->policy_partial_evict) {
	case TP_PARTIAL_ON:
		return true;
	case TP_PARTIAL_AUTO:
		/* A filter blind to cost would spread evictions over many
		 * tensors, each then owing a regeneration. */
		return tp_director_traits(tp_pol_director(pol))->overlap &&
		       (tp_filter_traits(tp_pol_filter(pol))->next_use ||
			tp_filter_uses_cost(tp_pol_filter(pol)));
	default:
		return false;
	}
}

bool tp_policy_split(const struct tp_policy *pol)
{
	switch (pol->conf->policy_split) {
	case TP_PARTIAL_ON:
		return true;
	case TP_PARTIAL_AUTO:
		/*
		 * The keys' director, not a pair policy.tune has on trial:
		 * whether an op fits at all must not hang on a trial.
		 */
		return tp_director_traits(pol->conf->policy_director)->overlap ||
		       pol->conf->policy_plan == TP_PLAN_KIND_TSPLIT;
	default:
		return false;
	}
}

bool tp_policy_settle_on_free(const struct tp_policy *pol)
{
	return tp_director_traits(tp_pol_director(pol))->overlap;
}

bool tp_policy_recompute_back(struct tp_policy *pol,
			      const struct tp_tensor *t)
{
	struct tp_director_in in;

	director_in_base(pol, t, false, &in);
	in.m = (double)t->bytes - in.m;	/* hide_ns 0: the acquire waits */
	return tp_director_recompute_back(tp_pol_director(pol), &in);
}

void tp_policy_forget(struct tp_policy *pol, struct tp_tensor *t)
{
	if (pol->vops.del)
		pol->vops.del(pol, t);
	tp_prefetch_forget(pol->pf, t);
}

void tp_policy_stats(struct tp_policy *pol, struct tp_stats *st)
{
	struct tp_prefetch_stats ps;

	st->policy_decisions = pol->decisions;
	st->policy_ns = pol->decision_ns;
	tp_prefetch_get_stats(pol->pf, &ps);
	st->prefetch_halted = ps.halted;
	tp_planned_stats(pol, st);
	st->tune_trials = pol->tune.trials;
	st->tune_pending = tune_on(pol) && tp_tune_pending(&pol->tune);
	st->tune_filter = (uint64_t)tp_pol_filter(pol);
	st->tune_director = (uint64_t)tp_pol_director(pol);
}

void tp_policy_prefetch_stats(struct tp_policy *pol,
			      struct tp_prefetch_stats *st)
{
	tp_prefetch_get_stats(pol->pf, st);
}

void tp_policy_seed(struct tp_policy *pol, uint64_t seed)
{
	pol->rng = seed ? seed : 1;
}

void tp_policy_set_index_mode(struct tp_policy *pol, int mode)
{
	tp_pol_index_set_mode(pol->idx, (enum tp_pol_index_mode)mode);
}

/* --- the policy's op hooks for lineage (pager/hooks.h) ---------------- */

static bool hooks_wants_cut(void *priv)
{
	return tp_policy_wants_cuts(priv);
}

static unsigned hooks_begin(void *priv, struct tp_tensor *const *in,
			    unsigned n_in, const struct tp_op_split *cut)
{
	return tp_policy_op_begin(priv, in, n_in, cut);
}

static void hooks_end(void *priv, struct tp_tensor *const *in, unsigned n_in,
		      struct tp_tensor *const *out, unsigned n_out,
		      uint64_t ns)
{
	tp_policy_op_end(priv, in, n_in, out, n_out, ns);
}

static void hooks_cost_changed(void *priv, struct tp_tensor *t)
{
	tp_policy_cost_changed(priv, t);
}

void tp_policy_op_hooks(struct tp_policy *pol, struct tp_op_hooks *hooks)
{
	*hooks = (struct tp_op_hooks){
		.wants_cut = hooks_wants_cut,
		.begin = hooks_begin,
		.end = hooks_end,
		.cost_changed = hooks_cost_changed,
		.priv = pol,
	};
}
