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
#include "ctx/log.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "vmm/vmm.h"

TP_API struct tp_ctx *tp_ctx_create(const char *opts)
{
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

	ctx->vmm = tp_vmm_open(&ctx->conf);
	if (!ctx->vmm) {
		ret = -errno;
		tp_ctx_error(ctx, ret, "cannot open the vmm backend");
		goto err_free;
	}
	ctx->pager = tp_pager_create(ctx);
	if (!ctx->pager) {
		ret = -errno;
		goto err_vmm;
	}
	/* Lineage installs its regeneration callbacks into ctx->pager. */
	ctx->lineage = tp_lineage_create(ctx);
	if (!ctx->lineage) {
		ret = -errno;
		goto err_pager;
	}
	/*
	 * POLICY: created here; its victim ops replace the pager's default
	 * LRU (tp_pager_set_victim_ops), and it sets ctx->iter_hook.
	 */
	return ctx;

err_pager:
	tp_pager_destroy(ctx->pager);
err_vmm:
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
	/* POLICY: destroyed here, after its victim ops are uninstalled. */
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
	ret = tp_vmm_sync_all(ctx->vmm);
	tp_pager_sync(ctx->pager);
	return ret;
}

TP_API int tp_stats_get(struct tp_ctx *ctx, struct tp_stats *st)
{
	if (!ctx || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	tp_pager_stats(ctx->pager, st);
	/* POLICY: its decision counters are added here. */
	return 0;
}

TP_API int tp_iteration_begin(struct tp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->in_iteration)
		return -EBUSY;
	ctx->in_iteration = true;
	return ctx->iter_hook ? ctx->iter_hook(ctx->iter_priv, false) : 0;
}

TP_API int tp_iteration_end(struct tp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (!ctx->in_iteration)
		return -EINVAL;
	ctx->in_iteration = false;
	ctx->iterations++;
	return ctx->iter_hook ? ctx->iter_hook(ctx->iter_priv, true) : 0;
}
