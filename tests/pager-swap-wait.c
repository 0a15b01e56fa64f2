/* SPDX-License-Identifier: MIT */
/*
 * Host swap that copies in flight will free: a tensor freed while its
 * offload is still being copied gives its swap buffers back once that
 * copy lands. An offload that needs buffers then, and that those would
 * cover, waits for the copy where host memory costs more than copies do
 * (pinned memory on a GPU: the sim's h200 profile charges what pinning
 * cost there), so host swap does not grow; where host memory costs
 * nothing (the sim's custom profile), it takes new memory at once.
 * host_peak, the most swap in use, tells which.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tests/pager-util.h"

#define MB		(1u << 20)
#define SIZE		(8 * MB)

struct run {
	uint64_t host_peak, stall_ns;
	int ret;
};

static void one(const char *profile, struct run *r)
{
	char opts[256];
	struct tp_tensor *a, *b;
	struct tp_stats st;
	struct tp_ctx *ctx;

	memset(r, 0, sizeof(*r));
	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=2M,pager.budget=64M,"
		 "pager.rescue=0,policy.writeback=off,vmm.sim.profile=%s",
		 profile);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("sim context (%s): %s", profile, strerror(errno));
	a = tp_tensor_create(ctx, SIZE, 0);
	b = tp_tensor_create(ctx, SIZE, 0);
	if (!a || !b || !tp_tensor_acquire(ctx, a, TP_WRITE) ||
	    !tp_tensor_acquire(ctx, b, TP_WRITE))
		bail_out("tensors: %s", strerror(errno));
	tp_tensor_release(ctx, a);
	tp_tensor_release(ctx, b);
	/* A's copy out is in flight when A goes: its buffers come back
	 * after it. */
	r->ret = tp_tensor_offload(ctx, a) ?: tp_tensor_free(ctx, a);
	r->ret = r->ret ?: tp_tensor_offload(ctx, b);
	r->ret = r->ret ?: tp_sync(ctx);
	tp_stats_get(ctx, &st);
	r->host_peak = st.host_peak;
	r->stall_ns = st.stall_ns;
	tp_tensor_free(ctx, b);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct run h200, custom;

	plan_tests(3);
	one("h200", &h200);
	one("custom", &custom);
	ok(!h200.ret && !custom.ret, "both offloads done (%d, %d)", h200.ret,
	   custom.ret);
	ok(h200.host_peak == SIZE,
	   "h200: pinning costs more than the copy: B's offload waited for A's buffers (swap peak %llu MiB)",
	   (unsigned long long)(h200.host_peak / MB));
	ok(custom.host_peak == 2 * SIZE,
	   "custom: host memory is free: B's offload took more at once (swap peak %llu MiB)",
	   (unsigned long long)(custom.host_peak / MB));
	return exit_status();
}
