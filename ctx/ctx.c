/* SPDX-License-Identifier: MIT */
/*
 * The context: configuration, then each layer from the bottom up, torn
 * down in the reverse order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctx/ctx.h"
#include "base/log.h"
#include "tracer/tracer.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "policy/policy.h"
#include "vmm/vmm.h"

/*
 * The layers meet here: the pager reaches the policy only through its
 * victim ops, the policy lineage only through cost ops, and lineage the
 * policy only through op hooks, each table filled whole by the layer
 * that answers (pager/hooks.h).
 */
/* Create the policy and install it: victim ops, costs, clock, iterations. */
static int policy_create(struct tp_ctx *ctx)
{
	struct tp_op_hooks hooks;

	ctx->policy = tp_policy_create(&ctx->conf, ctx->pager, ctx->vmm);
	ctx->vops = calloc(1, sizeof(*ctx->vops));
	ctx->cost_ops = calloc(1, sizeof(*ctx->cost_ops));
	if (!ctx->policy || !ctx->vops || !ctx->cost_ops)
		return -ENOMEM;

	tp_lineage_cost_ops(ctx->lineage, ctx->cost_ops);
	tp_policy_set_cost_ops(ctx->policy, ctx->cost_ops);
	tp_policy_op_hooks(ctx->policy, &hooks);
	tp_lineage_set_op_hooks(ctx->lineage, &hooks);

	*ctx->vops = *tp_policy_victim_ops(ctx->policy);
	tp_pager_set_victim_ops(ctx->pager, ctx->vops);
	return 0;
}

/* Undo policy_create(), whatever part of it was done. */
static void policy_destroy(struct tp_ctx *ctx)
{
	if (ctx->lineage) {
		tp_lineage_set_op_hooks(ctx->lineage, NULL);
	}
	if (ctx->policy) {
		/* The pager falls back to its LRU before the policy goes. */
		tp_pager_set_victim_ops(ctx->pager, NULL);
		tp_policy_destroy(ctx->policy);
		ctx->policy = NULL;
	}
	free(ctx->vops);
	free(ctx->cost_ops);
	ctx->vops = NULL;
	ctx->cost_ops = NULL;
}

void tp_ctx_pager_conf(const struct tp_conf *c, uint64_t device_bytes,
		       struct tp_pager_conf *pc)
{
	*pc = (struct tp_pager_conf){
		.budget = tp_psize_bytes(&c->pager_budget, device_bytes),
		.host_budget = c->pager_host_budget,
		.swap_ahead = c->pager_swap_ahead,
		.slab_fraction = c->pager_slab_fraction,
		.swap_cache = c->pager_swap_cache,
		.contiguous = c->vmm_mode == TP_VMM_MODE_CONTIGUOUS,
		.range_cache = c->pager_range_cache,
		.range_cache_freed = c->pager_range_cache_freed,
		.move_evicted = c->pager_move_evicted,
		.range_cache_max = tp_psize_bytes(&c->pager_range_cache_max,
						  device_bytes),
		.rescue = c->pager_rescue,
		.work_limit = c->pager_work_limit,
		.high_watermark = c->pager_high_watermark,
		.low_watermark = c->pager_low_watermark,
	};
}

void tp_ctx_lineage_conf(const struct tp_conf *c, struct tp_lineage_conf *lc)
{
	*lc = (struct tp_lineage_conf){
		.cost_alpha = c->lineage_cost_alpha,
		.costs_model = c->policy_costs == TP_COSTS_MODEL,
		.split_max_parts = (unsigned)c->policy_split_max_parts,
		.recompute_limit = c->lineage_recompute_limit,
		.max_recompute_depth = c->lineage_max_recompute_depth,
		.regen_rows = c->lineage_regen_rows,
	};
}

/* A layer's errors are the context's last error (struct tp_errors). */
static void layer_error(void *priv, int err, const char *msg)
{
	tp_ctx_error(priv, err, "%s", msg);
}

void tp_ctx_vmm_conf(const struct tp_conf *c, struct tp_vmm_conf *vc)
{
	*vc = (struct tp_vmm_conf){
		.backend = (enum tp_vmm_backend_kind)c->vmm_backend,
		.chunk_size = c->vmm_chunk_size,
		.mode = (enum tp_vmm_mode)c->vmm_mode,
		.mapping = (enum tp_vmm_mapping)c->vmm_mapping,
		.extent_max = c->vmm_extent_max,
		.device = c->vmm_device,
		.device_memory = c->vmm_device_memory,
		.host_copy_threads = c->vmm_host_copy_threads,
		.cuda_fault_threads = c->vmm_cuda_fault_threads,
		.sim_profile = (enum tp_sim_profile_kind)c->vmm_sim_profile,
		.sim_map_ns = c->vmm_sim_map_ns,
		.sim_set_access_ns = c->vmm_sim_set_access_ns,
		.sim_unmap_ns = c->vmm_sim_unmap_ns,
		.sim_driver_granule = c->vmm_sim_driver_granule,
		.sim_driver_scale = c->vmm_sim_driver_scale,
		.sim_copy_latency_ns = c->vmm_sim_copy_latency_ns,
		.sim_bandwidth = c->vmm_sim_bandwidth,
		.sim_sync = c->vmm_sim_sync,
		.va_reserve = (uint32_t)c->vmm_va_reserve,
		.release_behind = (uint32_t)c->vmm_release_behind,
		.map_ahead = (enum tp_vmm_map_ahead)c->vmm_map_ahead,
		.map_gate = (enum tp_vmm_map_gate)c->vmm_map_gate,
	};
}

TP_API struct tp_ctx *tp_ctx_create(const char *opts)
{
	struct tp_vmm_conf vc;
	struct tp_pager_conf pc;
	struct tp_lineage_conf lc;
	struct tp_errors errors;
	struct tp_ctx *ctx;
	int ret;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ret = tp_conf_load(&ctx->conf, opts);
	if (ret) {
		/* Unknown keys and bad values alike: the log says which. */
		ret = -EINVAL;
		goto err_free;
	}
	tp_log_set_level((enum tp_log_level)ctx->conf.log_level);

	tp_ctx_vmm_conf(&ctx->conf, &vc);
	errors = (struct tp_errors){ .report = layer_error, .priv = ctx };
	ctx->vmm = tp_vmm_open(&vc);
	if (!ctx->vmm) {
		ret = -errno;
		tp_ctx_error(ctx, ret, "cannot open the vmm backend");
		goto err_free;
	}
	if (ctx->conf.stats_trace[0]) {
		ctx->tracer = tp_tracer_open(ctx->vmm, ctx->conf.stats_trace);
		if (!ctx->tracer) {
			ret = -errno;
			tp_ctx_error(ctx, ret, "stats.trace: cannot write %s",
				     ctx->conf.stats_trace);
			goto err_vmm;
		}
	}
	tp_ctx_pager_conf(&ctx->conf, ctx->vmm->device_bytes, &pc);
	tp_vmm_set_workspace_max(ctx->vmm,
				 tp_psize_bytes(&ctx->conf.vmm_workspace_max,
						ctx->vmm->device_bytes));
	tp_vmm_set_op_math(ctx->vmm, (enum tp_op_math)ctx->conf.vmm_math);
	ctx->pager = tp_pager_create(ctx->vmm, ctx->tracer, &pc, &errors);
	if (!ctx->pager) {
		ret = -errno;
		goto err_vmm;
	}
	/* Lineage installs its regeneration callbacks into ctx->pager. */
	tp_ctx_lineage_conf(&ctx->conf, &lc);
	ctx->lineage = tp_lineage_create(ctx->pager, ctx->vmm, ctx->tracer, &lc,
					 &errors, ctx);
	if (!ctx->lineage) {
		ret = -errno;
		goto err_pager;
	}
	/* The policy's victim ops replace the pager's default LRU. */
	ret = policy_create(ctx);
	if (ret)
		goto err_policy;
	return ctx;

err_policy:
	policy_destroy(ctx);
	tp_lineage_destroy(ctx->lineage);
err_pager:
	tp_pager_destroy(ctx->pager);
err_vmm:
	tp_tracer_close(ctx->tracer);
	tp_vmm_close(ctx->vmm);
err_free:
	free(ctx);
	errno = ret < 0 ? -ret : EINVAL;
	return NULL;
}

TP_API void tp_ctx_destroy(struct tp_ctx *ctx)
{
	if (!ctx)
		return;
	/* Written while every layer is still there; nothing traced after. */
	tp_tracer_close(ctx->tracer);
	ctx->tracer = NULL;
	policy_destroy(ctx);
	/* Lineage drops the references its records hold. */
	tp_lineage_destroy(ctx->lineage);
	tp_pager_destroy(ctx->pager);
	tp_vmm_close(ctx->vmm);
	free(ctx);
}

TP_API int tp_sync(struct tp_ctx *ctx)
{
	int ret;

	if (!ctx)
		return -EINVAL;
	tp_vmm_wait_why("tp_sync");
	ret = tp_vmm_sync_all(ctx->vmm);
	tp_pager_sync(ctx->pager);
	/* Device op costs are read once their events completed: now. */
	if (ctx->lineage)
		tp_lineage_harvest_costs(ctx->lineage);
	return ret;
}

TP_API int tp_stats_get(struct tp_ctx *ctx, struct tp_stats *st)
{
	if (!ctx || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	tp_pager_stats(ctx->pager, st);
	if (ctx->policy)
		tp_policy_stats(ctx->policy, st);
	return 0;
}

bool tp_ctx_retry(struct tp_ctx *ctx, int ret)
{
	return (ret == -ENOMEM || ret == -TP_EWORK) && ctx && ctx->policy &&
	       tp_policy_tune_give_up(ctx->policy);
}

TP_API int tp_iteration_begin(struct tp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->in_iteration)
		return -EBUSY;
	ctx->in_iteration = true;
	tp_pager_work_iteration(ctx->pager, true);
	if (ctx->policy)
		tp_policy_iteration_begin(ctx->policy);
	return 0;
}

TP_API int tp_iteration_end(struct tp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (!ctx->in_iteration)
		return -EINVAL;
	ctx->in_iteration = false;
	ctx->iterations++;
	tp_pager_work_iteration(ctx->pager, false);
	if (ctx->policy)
		tp_policy_iteration_end(ctx->policy);
	return 0;
}
