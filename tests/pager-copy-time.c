/* SPDX-License-Identifier: MIT */
/*
 * The measured time of a copy, which feeds the policy's bandwidth
 * estimate, runs from when its stream starts it to its completion: a
 * small offload queued behind a long op is not measured as the op's
 * length: on sim, exactly the copy's configured cost. And a tensor's
 * adjacent pages go to and come back from adjacent swap buffers in one
 * copy each way. On host, a copy queued behind another is timed from when
 * the copy engine picks it up.
 */
#include "config.h"

#include <time.h>

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"
#include "vmm/backend_host.h"
#include "vmm/backend_sim.h"
#include "vmm/vmm.h"

#define OP_NS 1000000000ull	/* a 1 s op */

static uint64_t bytes_seen, ns_seen, last_ns;
static unsigned calls;

static void copy_done(void *priv, bool d2h, uint64_t bytes, uint64_t ns)
{
	calls++;
	bytes_seen += bytes;
	ns_seen += ns;
	last_ns = ns;
}

/*
 * Host: an offload queued behind another copy held 200 ms by the copy
 * engine's gate is timed from when the engine picks it up.
 */
static void host_queued(void)
{
	struct tp_victim_ops ops;
	struct tp_tensor *a, *b;
	struct tp_ctx *ctx;
	struct timespec hold = { 0, 200000000 };

	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=64K,pager.budget=64M");
	if (!ctx)
		bail_out("tp_ctx_create(host): %s", strerror(errno));
	a = tp_tensor_create(ctx, 1 << 20, 0);
	b = tp_tensor_create(ctx, 64 << 10, 0);
	ok(a && b && tp_tensor_acquire(ctx, a, TP_WRITE) &&
	   !tp_tensor_release(ctx, a) && tp_tensor_acquire(ctx, b, TP_WRITE) &&
	   !tp_tensor_release(ctx, b), "host: two tensors written");
	ops = ctx->pager->victim;
	ops.copy_done = copy_done;
	tp_pager_set_victim_ops(ctx->pager, &ops);
	calls = 0;
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	tp_tensor_offload(ctx, a);
	tp_tensor_offload(ctx, b);
	nanosleep(&hold, NULL);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, false);
	tp_sync(ctx);
	/* Polled in issue order: b's is the last one reported. */
	ok(calls == 2 && last_ns < 100000000u,
	   "host: the offload queued behind a held one took %llu ns, not the 200 ms it waited",
	   (unsigned long long)last_ns);
	tp_tensor_free(ctx, a);
	tp_tensor_free(ctx, b);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_victim_ops ops = { 0 };
	struct tp_stats st;
	struct tp_ctx *ctx;
	struct tp_tensor *t;
	size_t chunk;
	uint64_t want, copies0;

	plan_tests(10);
	/* Swap blocks of the sizes taken (the case of two below). */
	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,pager.budget=64M,"
			    "pager.swap_ahead=0");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	tp_stats_get(ctx, &st);
	chunk = st.chunk_size;
	t = tp_tensor_create(ctx, chunk, 0);
	ok(t && tp_tensor_acquire(ctx, t, TP_WRITE) && !tp_tensor_release(ctx, t),
	   "a one-chunk tensor, written");
	/* Watch what the policy is told, its other callbacks kept. */
	ops = ctx->pager->victim;
	ops.copy_done = copy_done;
	tp_pager_set_victim_ops(ctx->pager, &ops);

	ok_rc(tp_vmm_launch(ctx->vmm, TP_STREAM_COMPUTE, OP_NS, NULL, NULL),
	      "a 1 s op on the compute stream");
	ok_rc(tp_tensor_offload(ctx, t), "offload queued behind it");
	ok_rc(tp_sync(ctx), "sync");
	want = tp_vmm_sim_copy_ns(ctx->vmm, chunk);
	ok(calls == 1 && bytes_seen == chunk && ns_seen == want,
	   "copy_done: %llu bytes in %llu ns, the copy's own cost %llu (not %llu)",
	   (unsigned long long)bytes_seen, (unsigned long long)ns_seen,
	   (unsigned long long)want, (unsigned long long)(OP_NS + want));
	tp_stats_get(ctx, &st);
	ok(st.copy_d2h_ns == want, "stats: copy_d2h_ns %llu == %llu",
	   (unsigned long long)st.copy_d2h_ns, (unsigned long long)want);
	tp_tensor_free(ctx, t);

	/*
	 * Eight pages: one copy out and one back per host swap block. The
	 * first tensor's buffer is free and taken first, the other seven
	 * come in a new block: two copies each way, never one across the
	 * two blocks (the driver refuses that), still one batch timed.
	 */
	t = tp_tensor_create(ctx, 8 * chunk, 0);
	ok(t && tp_tensor_acquire(ctx, t, TP_WRITE) && !tp_tensor_release(ctx, t),
	   "an eight-chunk tensor, written");
	calls = 0;
	copies0 = ctx->vmm->stats.call[TP_CALL_COPY].calls;
	tp_tensor_offload(ctx, t);
	tp_sync(ctx);
	tp_tensor_acquire(ctx, t, TP_READ);
	tp_tensor_release(ctx, t);
	tp_sync(ctx);
	ok(ctx->vmm->stats.call[TP_CALL_COPY].calls - copies0 == 4 &&
	   calls == 2 && !tp_pager_has_evicted(t) && tp_pager_is_resident(t),
	   "offload and reload of 8 pages in two blocks: %llu copies (4), %u batches timed",
	   (unsigned long long)(ctx->vmm->stats.call[TP_CALL_COPY].calls -
				copies0), calls);
	tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
	host_queued();
	return exit_status();
}
