/* SPDX-License-Identifier: MIT */
/*
 * Host swap full of a tensor lineage can regenerate, and the room a new
 * tensor needs can only come from uncomputable ones, which must be
 * offloaded: the regenerable copy in swap is dropped (its pages become
 * EVICTED) to make room, and the tensor comes back later, regenerated,
 * bit for bit. Host backend, 4 KiB chunks, 4 chunks of budget, 2 of swap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define NF	2048		/* floats: two chunks */

int main(void)
{
	static const struct tops_scale_params sp = { 2.0f, 1.0f };
	float *want = malloc(NF * sizeof(float));
	float *got = malloc(NF * sizeof(float));
	struct tp_tensor *x, *y = NULL, *u, *v;
	size_t bytes = NF * sizeof(float);
	struct tp_stats st;
	struct tp_ctx *ctx;

	plan_tests(7);
	if (!want || !got)
		bail_out("malloc");
	ctx = tp_ctx_create("vmm.backend=host,pager.rescue=0,vmm.chunk_size=4K,pager.budget=16K,"
			    "pager.host_budget=8K,pager.slab_fraction=0,"
			    "pager.range_cache=0,pager.high_watermark=100,"
			    "pager.low_watermark=100,policy.prefetch=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));

	/* x: two chunks, uncomputable; y = 2x + 1: computable. */
	x = tops_input(ctx, NF, 5);
	ok(x != NULL, "an input of two chunks");
	ok(!tp_op_run(ctx, &tops_scale, &sp, sizeof(sp), &x, 1, &y, &bytes, 1) &&
	   !tp_tensor_read(ctx, y, 0, want, bytes) &&
	   !tp_tensor_offload(ctx, y) && !tp_sync(ctx),
	   "y = scale(x), two chunks, offloaded: swap is full");

	/* u fits beside x; v needs x or u gone, and only by offload. */
	u = tops_input(ctx, NF, 6);
	v = u ? tops_input(ctx, NF, 7) : NULL;
	ok(u && v, "two more inputs of two chunks fit (%s)",
	   v ? "" : tp_last_error(ctx));
	tp_stats_get(ctx, &st);
	ok(st.evictions == 0 && st.offloads == 2,
	   "by offloads only (%llu offloads, %llu evictions)",
	   (unsigned long long)st.offloads, (unsigned long long)st.evictions);
	ok(y && tp_pager_has_evicted(y),
	   "y's copy in swap was dropped for them: its pages are EVICTED");
	ok(u && v && !tp_tensor_read(ctx, v, 0, got, bytes) &&
	   !tp_tensor_free(ctx, v) && !tp_tensor_free(ctx, u),
	   "v read back; u and v freed");
	ok(y && !tp_tensor_read(ctx, y, 0, got, bytes) &&
	   !memcmp(got, want, bytes), "y regenerated bit for bit");

	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
	free(want);
	free(got);
	return exit_status();
}
