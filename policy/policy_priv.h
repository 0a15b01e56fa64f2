/* SPDX-License-Identifier: MIT */
/* The policy's state, shared by policy.c and victim.c. */
#ifndef TP_POLICY_PRIV_H
#define TP_POLICY_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/conf.h"
#include "pager/pager.h"
#include "vmm/vmm.h"
#include "policy/bandwidth.h"
#include "policy/director.h"
#include "policy/filter.h"
#include "policy/filter_coop.h"
#include "policy/filter_overlap.h"
#include "policy/index.h"
#include "policy/planned.h"
#include "policy/policy.h"
#include "policy/prefetch.h"
#include "policy/tune.h"
#include "pager/watermark.h"
#include "policy/writeback_auto.h"

/* A candidate set aside during one choose() (it cannot leave now). */
struct tp_pol_skip {
	struct tp_tensor *t;
	struct tp_pol_key key;
};

struct tp_policy {
	/* Its collaborators: either may be NULL (a policy tested alone). */
	struct tp_pager *pager;
	struct tp_vmm *vmm;
	const struct tp_conf *conf;	/* read at each use (tp_ctl_set) */
	struct tp_victim_ops vops;
	struct tp_cost_ops cost;
	bool has_cost;
	uint64_t (*now_fn)(void *priv);
	void *now_priv;
	uint64_t access_clock;		/* latest last_access_ns seen */
	uint64_t work_clock;		/* the prefetcher's (work_now()) */

	struct tp_pol_index *idx;
	int filter;			/* the filter the keys were built for */
	int search;			/* the search the index is kept for */
	int director;			/* the director never_leaves() last
					 * answered for */
	double mem_sum;			/* sum of m over candidates */
	uint64_t rng;
	struct tp_pol_skip *skip;
	size_t skip_cap;
	/* The overlap filter's candidates of one choice (filter_overlap.c). */
	struct tp_overlap_cand *ocand;
	struct tp_overlap_rank *orank;	/* their ranking, as many */
	size_t ocand_cap;

	struct tp_bandwidth bw;
	struct tp_watermark wm;
	struct tp_prefetch *pf;
	struct tp_planned *plan;	/* policy.plan (planned.c) */

	struct tp_coop_part coop;	/* Coop §3.4 (filter_coop.c) */
	/* Of the last predicted iteration's reloads, the fraction a
	 * prefetch hid (1 before any was seen), and the counters at its
	 * start. */
	double reload_hidden;
	uint64_t iter_reloads, iter_in_time;
	uint64_t iter_compute, iter_recompute;	/* the pager's then */
	struct tp_wb_auto wb_auto;	/* policy.writeback = auto */
	struct tp_tune tune;		/* policy.tune */
	struct tp_tune_pair tune_auto;	/* the keys' defaults: auto tunes them */
	uint64_t tune_chose;		/* victims chosen at the iteration's
					 * begin, and of them offloaded */
	uint64_t tune_offloaded;
	uint64_t decisions, decision_ns;
	uint64_t chose_evict, chose_offload;
	/* Candidates scored for victim choices so far: what a choice
	 * costs, charged as paging work (pager.work_limit). */
	uint64_t scored;
};

uint64_t tp_policy_now(struct tp_policy *pol);

/*
 * The filter and the director in force: policy.tune's candidate on trial
 * or kept, else the keys'. Every decision reads them here.
 */
static inline int tp_pol_filter(const struct tp_policy *pol)
{
	const struct tp_tune_pair *p = tp_tune_pair(&pol->tune);

	return p ? p->filter : pol->conf->policy_filter;
}

static inline int tp_pol_director(const struct tp_policy *pol)
{
	const struct tp_tune_pair *p = tp_tune_pair(&pol->tune);

	return p ? p->director : pol->conf->policy_director;
}
/* c_r(t) through the cost ops or the fallback; 0 for a partly evicted
 * tensor, whose regeneration is owed already. */
double tp_policy_cost(struct tp_policy *pol, const struct tp_tensor *t);
/* DTR's cost of evicting @t (tp_cost_ops.evict_ns), else tp_policy_cost(). */
double tp_policy_evict_cost(struct tp_policy *pol, const struct tp_tensor *t);
/* The same, with the evicted pages of the ancestors it counts. */
double tp_policy_regen_cost(struct tp_policy *pol, const struct tp_tensor *t,
			    size_t *anc_pages);
bool tp_policy_computable(struct tp_policy *pol, const struct tp_tensor *t);
/* Whether rows of @t an op in parts has read go to host swap (victim ops). */
bool tp_policy_rows_offload(struct tp_policy *pol, const struct tp_tensor *t);
/*
 * What unmapping @pages pages now and mapping them back costs the host
 * (policy.remap_ns a chunk, else per handle as the vmm measures or
 * models it).
 */
double tp_policy_remap_ns(struct tp_policy *pol, size_t pages);
/*
 * Whether that cost is per handle (the driver's, measured on a device or
 * by the sim's profile), rather than the keys' cost per chunk.
 */
bool tp_policy_remap_per_handle(const struct tp_policy *pol);
/* Bytes of copies to host in flight (0 without a pager). */
double tp_policy_out_backlog(struct tp_policy *pol);
/* Fill the director's input for @t. */
void tp_policy_director_in(struct tp_policy *pol, const struct tp_tensor *t,
			   bool no_offload, struct tp_director_in *in);
/*
 * The same in two halves, for a filter that ranks on a bound first:
 * _begin() fills all but c_r and the ancestors' remap (c_r NAN) and says
 * in *@next the predicted next use; _cost() fills those, walking the
 * evicted ancestry (the dear part).
 */
void tp_policy_director_in_begin(struct tp_policy *pol,
				 const struct tp_tensor *t, bool no_offload,
				 struct tp_director_in *in, uint64_t *next);
void tp_policy_director_in_cost(struct tp_policy *pol,
				const struct tp_tensor *t,
				struct tp_director_in *in, uint64_t next);
/*
 * A floor under tp_policy_regen_cost(): the op that made @t alone, 0 where
 * the regeneration is owed already, INFINITY where there is none.
 */
double tp_policy_regen_floor(struct tp_policy *pol, const struct tp_tensor *t);
/* The sampler's generator (xorshift64*, seeded by tp_policy_seed()). */
uint64_t tp_policy_rand(struct tp_policy *pol);
/*
 * Whether @t, leaving by @how, may go ahead of need: used after
 * @ahead_of, or with no @ahead_of an offload whose copies fit before its
 * next use (see choose_ahead in pager/hooks.h).
 */
bool tp_policy_ahead_ok(struct tp_policy *pol, const struct tp_tensor *t,
			const struct tp_tensor *ahead_of, enum tp_leave how,
			const struct tp_director_in *in);
/* What leaving by @how costs the step that waits for the room, ns. */
double tp_policy_leave_cost(struct tp_policy *pol, enum tp_leave how,
			    const struct tp_director_in *in);
/*
 * A candidate's distance to its next use: @reuse_ns as the record predicts
 * it (tp_prefetch_uses()), or where it says nothing (0) its staleness at
 * @now (DELTA eq. 1, DTR).
 */
static inline double tp_policy_distance(const struct tp_tensor *t,
					double reuse_ns, uint64_t now)
{
	if (reuse_ns > 0)
		return reuse_ns;
	return now > t->last_access_ns ? (double)(now - t->last_access_ns) : 0;
}

/* Victim callbacks (victim.c). */
void tp_policy_victim_init(struct tp_policy *pol);
void tp_policy_victim_fini(struct tp_policy *pol);
/* Re-key every candidate if policy.filter changed, follow policy.search. */
void tp_policy_sync_conf(struct tp_policy *pol);

#endif /* TP_POLICY_PRIV_H */
