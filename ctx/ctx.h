/* SPDX-License-Identifier: MIT */
/*
 * The context: configuration and one instance of each layer. Each layer
 * keeps its own state behind its own pointer; this struct only ties them.
 *
 * The layers below get their collaborators and options at creation
 * (tp_pager_create(), tp_lineage_create(), tp_policy_create()), never
 * the context.
 * Layer exception: kernels: a model keeps its context's backend (for
 * workspaces and where the data is), and a CUDA op that fails sets the
 * context's last error (kernels/cuda_util.c).
 */
#ifndef TP_CTX_CTX_H
#define TP_CTX_CTX_H

#include "tpager.h"
#include "ctl/conf.h"

struct tp_vmm;
struct tp_pager;
struct tp_lineage;
struct tp_policy;
struct tp_victim_ops;
struct tp_cost_ops;
struct tp_tracer;

struct tp_ctx {
	struct tp_conf conf;
	struct tp_vmm *vmm;
	struct tp_pager *pager;
	struct tp_lineage *lineage;
	struct tp_policy *policy;
	char last_error[512];		/* tp_error()'s message and the errno's */
	/* tp_iteration_begin/end: counted here, told to the policy. */
	uint64_t iterations;		/* completed */
	bool in_iteration;
	/* The tables handed between the layers (ctx.c, policy_create()). */
	struct tp_victim_ops *vops;
	struct tp_cost_ops *cost_ops;
	/* stats.trace, or NULL when the key is empty (ctx/tracer.h). */
	struct tp_tracer *tracer;
};

struct tp_vmm_conf;

/* tp_ctx_vmm_conf() - the vmm's options (@vc) from the vmm.* keys of @c. */
void tp_ctx_vmm_conf(const struct tp_conf *c, struct tp_vmm_conf *vc);
/*
 * tp_ctx_pager_conf() - the pager's options (@pc) from the pager.* keys
 * of @c, sizes resolved against @device_bytes.
 */
struct tp_pager_conf;
void tp_ctx_pager_conf(const struct tp_conf *c, uint64_t device_bytes,
		       struct tp_pager_conf *pc);
/* tp_ctx_lineage_conf() - lineage's options (@lc) from the keys of @c. */
struct tp_lineage_conf;
void tp_ctx_lineage_conf(const struct tp_conf *c, struct tp_lineage_conf *lc);

/* Keep @msg as the context's last error (tp_last_error) and log it. */
__attribute__((format(printf, 3, 4)))
void tp_ctx_error(struct tp_ctx *ctx, int err, const char *fmt, ...);

/*
 * tp_ctx_retry() - whether a public call that failed with @ret is to be
 * made once more: it failed for room or paging work under a pair
 * policy.tune had on trial, which ends (tp_policy_tune_give_up()); a
 * failed call leaves everything as it was.
 */
bool tp_ctx_retry(struct tp_ctx *ctx, int ret);

/*
 * tp_ctx_pair_in_force() - "filter/director" as @st says they were in
 * force (stats.tune_filter, tune_director: policy.tune may have kept
 * another pair than the keys'), into @out: 0, or -EINVAL.
 */
int tp_ctx_pair_in_force(const struct tp_stats *st, char *out, size_t len);

#endif /* TP_CTX_CTX_H */
