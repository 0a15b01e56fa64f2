/* SPDX-License-Identifier: MIT */
/*
 * The policy of one context: what leaves device memory, how, when release
 * starts, and what comes back ahead of use. The pager reaches it only
 * through the struct tp_victim_ops it is given and the notifications
 * below, all made by the context's wiring (ctx/).
 *
 * Configuration is read from the caller's conf at each use, so tp_ctl_set() of
 * policy.* and pager.*_watermark takes effect at the next decision.
 *
 * Threads: everything is called from the thread that holds the pager
 * (the caller's), except tp_policy_copy_done() and
 * tp_policy_prefetch_done(), which copy-completion threads may call.
 */
#ifndef TP_POLICY_POLICY_H
#define TP_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pager/hooks.h"
#include "pager/tensor.h"

struct tp_conf;
struct tp_pager;
struct tp_vmm;
struct tp_policy;
struct tp_stats;


/**
 * tp_policy_create() - a policy reading its options from @conf at each
 * use (the caller's, kept alive and current), asking @pg what paging
 * does and @vmm the chunk size and measured remap costs. Either may be
 * NULL (a policy tested alone). Return: the policy, or NULL with errno
 * (EINVAL, ENOMEM).
 */
struct tp_policy *tp_policy_create(const struct tp_conf *conf,
				   struct tp_pager *pg, struct tp_vmm *vmm);
void tp_policy_destroy(struct tp_policy *pol);

/**
 * tp_policy_victim_ops() - the callbacks to give tp_pager_set_victim_ops(),
 * every member filled. Valid until tp_policy_destroy().
 */
const struct tp_victim_ops *tp_policy_victim_ops(struct tp_policy *pol);

/* Install lineage's cost callbacks (NULL: the fallback above). */
void tp_policy_set_cost_ops(struct tp_policy *pol,
			    const struct tp_cost_ops *ops);

/**
 * tp_policy_op_hooks() - the policy's answers to lineage's notices of the
 * program's ops and of costs that fell (pager/hooks.h), every member
 * filled, priv @pol.
 */
void tp_policy_op_hooks(struct tp_policy *pol, struct tp_op_hooks *hooks);

/**
 * tp_policy_set_clock() - the clock staleness is measured on. A
 * policy created with a vmm reads the vmm's (host time on host and cuda,
 * virtual time on sim: tp_vmm_now_ns); without either, "now" is the
 * latest t->last_access_ns the policy has seen.
 */
void tp_policy_set_clock(struct tp_policy *pol,
			 uint64_t (*now_ns)(void *priv), void *priv);

/**
 * tp_policy_cost_changed() - @t's c_r went down (an evicted ancestor came
 * back), or what evicting it costs did (an evicted descendant came back). Keys are checked against the current cost when they win, which
 * covers increases; decreases must be told so @t is not passed over.
 */
void tp_policy_cost_changed(struct tp_policy *pol, struct tp_tensor *t);

/** tp_policy_copy_done() - a host copy of @bytes completed in @ns. */
void tp_policy_copy_done(struct tp_policy *pol, uint64_t bytes, uint64_t ns);

/**
 * tp_policy_release_bytes() - bytes the pager should release proactively
 * now (choose() victims until that much has left), given @used of
 * @budget: from pager.high_watermark down to pager.low_watermark; 0 with
 * filter overlap, which releases at demand only.
 */
uint64_t tp_policy_release_bytes(struct tp_policy *pol, uint64_t used,
				 uint64_t budget);

/* tp_iteration_begin()/tp_iteration_end() of the context. */
void tp_policy_iteration_begin(struct tp_policy *pol);
void tp_policy_iteration_end(struct tp_policy *pol);
/*
 * tp_policy_tune_give_up() - a demand failed for room (or paging work)
 * while policy.tune had a pair on trial: the trial ends, the keys' pair
 * in force again; true where there was one, and the caller, whose failed
 * call left everything as it was, tries once more.
 */
bool tp_policy_tune_give_up(struct tp_policy *pol);

/**
 * tp_policy_on_acquire() - @t is being acquired (every acquire, candidate
 * or not, before it waits on anything): recorded for the prefetcher and
 * counted as a prefetch hit or late.
 */
void tp_policy_on_acquire(struct tp_policy *pol, struct tp_tensor *t);

/**
 * tp_policy_writeback_pick() - resident tensors to copy to host now, while
 * the link is idle (policy.writeback; the pager's writeback_pick).
 */
size_t tp_policy_writeback_pick(struct tp_policy *pol, struct tp_tensor **out,
				size_t max);

/**
 * tp_policy_prefetch_pick() - offloaded tensors to reload now, soonest
 * predicted use first, into @out (room for @max): those due (see
 * TP_PREFETCH_DUE_SLACK), at most policy.prefetch.depth in flight.
 * Tensors cheaper to recompute than to reload are left to be recomputed
 * at use (DELTA §5.5). Each one returned must be answered with
 * tp_policy_prefetch_done().
 * Return: how many were written (0 when policy.prefetch is off).
 */
size_t tp_policy_prefetch_pick(struct tp_policy *pol, struct tp_tensor **out,
			       size_t max);

/**
 * tp_policy_used_after() - whether @v's next use is predicted after @t's
 * (from the last iteration's record); false when either is not known.
 */
bool tp_policy_used_after(struct tp_policy *pol, const struct tp_tensor *v,
			  const struct tp_tensor *t);

/* The reload of a picked tensor completed (@ok) or was not issued. */
void tp_policy_prefetch_done(struct tp_policy *pol, struct tp_tensor *t,
			     bool ok);

/**
 * tp_policy_partial_evict() - whether an eviction takes only the pages a
 * request lacks (policy.partial_evict; auto: with the delta-overlap
 * director and a filter that ranks by cost, which sees that taking more
 * of a partly evicted tensor adds no recompute).
 */
bool tp_policy_partial_evict(const struct tp_policy *pol);

/**
 * tp_policy_split() - whether an op that does not fit whole may run in
 * parts (policy.split; auto: with the delta-overlap director, whose
 * baselines, as published, run every op whole).
 */
bool tp_policy_split(const struct tp_policy *pol);

/**
 * tp_policy_settle_on_free() - whether freeing a tensor first regenerates
 * the evicted tensors it would make dearer (MegEngine's real deletion,
 * lineage/settle.c): with the delta-overlap director, which priced their
 * evictions with the tensor resident. The baselines keep their papers'
 * fake deletion.
 */
bool tp_policy_settle_on_free(const struct tp_policy *pol);

/**
 * tp_policy_recompute_back() - for an acquire of an offloaded @t: true
 * when recomputing it is cheaper than reloading it (DELTA §5.5).
 */
bool tp_policy_recompute_back(struct tp_policy *pol,
			      const struct tp_tensor *t);

struct tp_op_split;

/**
 * tp_policy_wants_cuts() - whether tp_policy_op_begin() should be told
 * how each op may be cut: only while the planner is on (the record keeps
 * the cuts it plans from). planned.c.
 */
bool tp_policy_wants_cuts(const struct tp_policy *pol);

/**
 * tp_policy_op_begin() - one of the program's ops is about to acquire
 * @in (@n_in of them); @cut: how it may run in parts, NULL: whole only.
 * Recorded for the planner (policy.plan). Return: the parts the plan
 * runs it in, or 0 (whole). planned.c.
 */
unsigned tp_policy_op_begin(struct tp_policy *pol, struct tp_tensor *const *in,
			    unsigned n_in, const struct tp_op_split *cut);

/* The op ran: @out its outputs, @ns its cost. planned.c. */
void tp_policy_op_end(struct tp_policy *pol, struct tp_tensor *const *in,
		      unsigned n_in, struct tp_tensor *const *out,
		      unsigned n_out, uint64_t ns);

/* @t is being freed (its struct goes): drop every reference to it. */
void tp_policy_forget(struct tp_policy *pol, struct tp_tensor *t);

/*
 * Fill the policy's fields of @st: policy_decisions and policy_ns. The
 * prefetch_* fields are the pager's, which sees every prefetch (the
 * user's too) complete.
 */
void tp_policy_stats(struct tp_policy *pol, struct tp_stats *st);

struct tp_prefetch_stats;
/* The prefetcher's own counts of the tensors it picked (prefetch.h). */
void tp_policy_prefetch_stats(struct tp_policy *pol,
			      struct tp_prefetch_stats *st);

/* Test hook: the seed of the sampling generator (policy.search=sample). */
void tp_policy_seed(struct tp_policy *pol, uint64_t seed);

/*
 * Test and benchmark hook: how exact search answers (enum
 * tp_pol_index_mode of policy/index.h: auto, the tournament, or a scan).
 */
void tp_policy_set_index_mode(struct tp_policy *pol, int mode);

#endif /* TP_POLICY_POLICY_H */
