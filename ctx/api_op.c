// SPDX-License-Identifier: MIT
/* The public tp_op_run(): the context's lineage runs it; and the launch's
 * wait for maps before a copy. */
#include "config.h"

#include <errno.h>

#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "vmm/vmm.h"

TP_API int tp_op_run(struct tp_ctx *ctx, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *inputs, unsigned n_in,
		     struct tp_tensor **outputs, const size_t *out_bytes,
		     unsigned n_out)
{
	int ret;

	if (!ctx || !ctx->lineage)
		return -EINVAL;
	do
		ret = tp_lineage_op_run(ctx->lineage, type, params,
					params_len, inputs, n_in, outputs,
					out_bytes, n_out);
	while (tp_ctx_retry(ctx, ret));
	return ret;
}

TP_API int tp_op_before_copy(const struct tp_op_launch *l)
{
	if (!l)
		return -EINVAL;
	/* A lineage run without a context maps nothing ahead. */
	if (!l->ctx || !l->ctx->vmm)
		return 0;
	return tp_vmm_gate(l->ctx->vmm, TP_STREAM_COMPUTE);
}
