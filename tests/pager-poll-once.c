/* SPDX-License-Identifier: MIT */
/*
 * A copy's event is asked once per poll, however many pages it moves:
 * the pages of one offload share it, and so do the swap buffers it fills.
 * A copy still in flight used to be asked again for each of its pages (a
 * 64-page tensor: 64 queries a poll; at 64 KiB chunks, thousands), which
 * was most of a thrashing replay's time.
 *
 * On sim, a 64-page tensor offloaded behind a 1 s op: while its copy is
 * in flight, a poll asks a few events, not one per page: 3 a poll here,
 * where it was 66.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"
#include "vmm/vmm.h"

#define PAGES	64
#define POLLS	10

int main(void)
{
	struct tp_stats st;
	struct tp_ctx *ctx;
	struct tp_tensor *t;
	uint64_t q0, q;

	plan_tests(4);
	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,pager.budget=64M");
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	tp_stats_get(ctx, &st);
	t = tp_tensor_create(ctx, PAGES * st.chunk_size, 0);
	ok(t && tp_tensor_acquire(ctx, t, TP_WRITE) && !tp_tensor_release(ctx, t),
	   "a %u-page tensor, written", PAGES);
	ok_rc(tp_vmm_launch(ctx->vmm, TP_STREAM_COMPUTE, 1000000000ull, NULL,
			    NULL), "a 1 s op on the compute stream");
	ok_rc(tp_tensor_offload(ctx, t), "its offload queued behind it");
	q0 = ctx->vmm->stats.call[TP_CALL_EVENT].calls;
	for (unsigned i = 0; i < POLLS; i++)
		tp_pager_poll(ctx->pager);
	q = ctx->vmm->stats.call[TP_CALL_EVENT].calls - q0;
	ok(t->inflight_pages == PAGES && q <= 4 * POLLS,
	   "%u polls of a copy in flight: %llu event queries (at most %u)",
	   POLLS, (unsigned long long)q, 4 * POLLS);
	tp_sync(ctx);
	tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
	return exit_status();
}
