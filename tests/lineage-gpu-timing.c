/* SPDX-License-Identifier: MIT */
/*
 * On a device, an op's cost is the time between two events around its
 * launch, folded in once the end event has completed, without a
 * synchronisation: run over the cuda backend on the stand-in driver
 * (tests/vmm-fake-libcuda.c, whose events are timed on the host clock),
 * an op that takes 4 ms costs about 4 ms, not its 1 us prior; the stats
 * count the measured time.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "tests/tap.h"
#include "tpager.h"
#include "vmm/backend_cuda.h"
#include "vmm/vmm.h"

#define MS 1000000.0
#define SLEEP_MS 4
#define RUNS 5

static int slow_launch(const struct tp_op_launch *l)
{
	struct timespec ts = { 0, SLEEP_MS * 1000000L };

	while (nanosleep(&ts, &ts))
		;
	return 0;
}

static const struct tp_op_type slow = {
	.name = "slow",
	.launch = slow_launch,
};

int main(void)
{
	struct tp_tensor *in, *out[RUNS + 1] = { NULL };
	struct tp_stats st;
	struct tp_ctx *ctx;
	size_t bytes = 4096;
	double cost;
	int i, ret = 0;

	plan_tests(4);
	tp_vmm_cuda_library = getenv("TPAGER_TEST_CUDA_LIBRARY") ?
			      getenv("TPAGER_TEST_CUDA_LIBRARY") : TP_FAKE_CUDA;
	ctx = tp_ctx_create("vmm.backend=cuda,pager.budget=64M,lineage.cost_alpha=1");
	if (!ctx) {
		skip(4, "the cuda backend does not open on %s", tp_vmm_cuda_library);
		return exit_status();
	}
	ok(tp_vmm_stream_handle(ctx->vmm, TP_STREAM_COMPUTE) != NULL,
	   "cuda: launches are asynchronous (a stream handle)");
	in = tp_tensor_create(ctx, bytes, TP_UNCOMPUTABLE);
	for (i = 0; i < RUNS && in && !ret; i++)
		ret = tp_op_run(ctx, &slow, NULL, 0, &in, 1, &out[i], &bytes, 1);
	ok(in && !ret, "%d runs of a 4 ms op", RUNS);
	/* The last run is still pending until something harvests it. */
	cost = tp_lineage_op_cost_ns(ctx->lineage, &slow);
	ok(cost >= (SLEEP_MS - 0.5) * MS && cost < 1000 * MS,
	   "its cost is the measured %.3f ms, not the 0.001 ms prior",
	   cost / MS);
	/* tp_sync reads the last one too. */
	ret = tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(!ret && st.compute_ns >= (uint64_t)(RUNS * (SLEEP_MS - 0.5) * MS) &&
	   st.compute_ns < (uint64_t)(RUNS * 1000 * MS),
	   "after tp_sync the pager counts the measured time of all %d runs (%.3f ms)",
	   RUNS, st.compute_ns / MS);
	tp_ctx_destroy(ctx);
	return exit_status();
}
