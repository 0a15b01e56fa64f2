/* SPDX-License-Identifier: MIT */
/*
 * Host swap prepared ahead of need (pager.swap_ahead). On the sim's h200
 * profile, host memory costs the caller 60.4 ms per 512 MiB to fault in
 * and 9.7 to pin: the first offload pays both; each growth then has the
 * next block faulted in off the caller's thread, so that an offload made
 * once it is ready pays the pinning only, and one made at once waits for
 * the rest. Without it every growth pays both. The block is within
 * pager.host_budget, at most 16 times pager.swap_ahead, and shows in
 * stats.host_held.
 *
 * With data (the backend under test: host, or cuda on the stand-in
 * driver, which refuses a copy across two pinned allocations): tensors
 * offloaded through several prepared blocks come back as written.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"
#include "vmm/vmm.h"

#define MB		(1ull << 20)

static struct tp_tensor *written(struct tp_ctx *ctx, size_t bytes)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, 0);

	if (!t || !tp_tensor_acquire(ctx, t, TP_WRITE) ||
	    tp_tensor_release(ctx, t))
		bail_out("tensor of %zu bytes: %s", bytes, strerror(errno));
	return t;
}

/* The caller's time an offload of @t took, on the sim's clock. */
static uint64_t offload_ns(struct tp_ctx *ctx, struct tp_tensor *t)
{
	uint64_t t0 = tp_vmm_now_ns(ctx->vmm);

	if (tp_tensor_offload(ctx, t))
		bail_out("offload: %s", strerror(errno));
	return tp_vmm_now_ns(ctx->vmm) - t0;
}

/* Let @ns of compute pass, the caller waiting for it. */
static void compute(struct tp_ctx *ctx, uint64_t ns)
{
	if (tp_vmm_launch(ctx->vmm, TP_STREAM_COMPUTE, ns, NULL, NULL) ||
	    tp_vmm_stream_sync(ctx->vmm, TP_STREAM_COMPUTE))
		bail_out("compute: %s", strerror(errno));
}

struct sim_run {
	uint64_t first_ns, later_ns, at_once_ns;
	uint64_t held_after_first, held, peak;
};

/*
 * Offload 32 MiB (first), let 20 ms pass, offload 32 MiB more (later:
 * the prepared block is ready), then 96 MiB at once (at once: more than
 * the block prepared meanwhile, which is not ready).
 */
static void sim(const char *extra, struct sim_run *r)
{
	char opts[256];
	struct tp_tensor *x, *y, *z;
	struct tp_stats st;
	struct tp_ctx *ctx;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.sim.profile=h200,vmm.chunk_size=2M,"
		 "pager.budget=1G,pager.rescue=0,pager.swap_cache=0,"
		 "policy.writeback=off,%s", extra);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("sim context (%s): %s", extra, strerror(errno));
	x = written(ctx, 32 * MB);
	y = written(ctx, 32 * MB);
	z = written(ctx, 96 * MB);
	r->first_ns = offload_ns(ctx, x);
	tp_stats_get(ctx, &st);
	r->held_after_first = st.host_held;
	compute(ctx, 20000000);
	r->later_ns = offload_ns(ctx, y);
	r->at_once_ns = offload_ns(ctx, z);
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	r->held = st.host_held;
	r->peak = st.host_peak;
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, z);
	tp_ctx_destroy(ctx);
}

static void sim_tests(void)
{
	struct sim_run on, off;
	struct tp_stats st;
	struct tp_tensor *x, *big[4];
	struct tp_ctx *ctx;

	sim("pager.swap_ahead=64M", &on);
	sim("pager.swap_ahead=0", &off);
	diag("caller's ns of the offloads, ahead on: %llu %llu %llu; off: %llu %llu %llu",
	     (unsigned long long)on.first_ns, (unsigned long long)on.later_ns,
	     (unsigned long long)on.at_once_ns,
	     (unsigned long long)off.first_ns,
	     (unsigned long long)off.later_ns,
	     (unsigned long long)off.at_once_ns);
	/* 32 MiB: 3.77 ms faulting in, 0.61 pinning. */
	ok(on.first_ns > 4000000 && on.first_ns == off.first_ns,
	   "the first offload obtains its swap at once either way (%llu ns)",
	   (unsigned long long)on.first_ns);
	ok(on.held_after_first == 96 * MB,
	   "then 64 MiB more are prepared ahead: stats.host_held %llu MiB",
	   (unsigned long long)(on.held_after_first / MB));
	/* The ready block of 64 MiB: 1.21 ms of pinning, and the copy. */
	ok(on.later_ns * 2 < off.later_ns,
	   "an offload once the block is ready pays its pinning only: %llu ns against %llu",
	   (unsigned long long)on.later_ns,
	   (unsigned long long)off.later_ns);
	ok(on.at_once_ns < off.at_once_ns,
	   "one right after waits for the rest of a preparation, still less than faulting in: %llu ns against %llu",
	   (unsigned long long)on.at_once_ns,
	   (unsigned long long)off.at_once_ns);
	ok(on.peak == off.peak && on.peak == 160 * MB,
	   "the swap in use is the same (%llu MiB)",
	   (unsigned long long)(on.peak / MB));
	ok(off.held == off.peak && on.held > on.peak,
	   "held: %llu MiB without, %llu with a block prepared ahead",
	   (unsigned long long)(off.held / MB),
	   (unsigned long long)(on.held / MB));

	/* Within the host budget: 32 MiB taken, 8 MiB left to prepare. */
	ctx = tp_ctx_create("vmm.backend=sim,vmm.sim.profile=h200,"
			    "vmm.chunk_size=2M,pager.budget=1G,pager.rescue=0,"
			    "pager.host_budget=40M,pager.swap_ahead=64M");
	if (!ctx)
		bail_out("sim context: %s", strerror(errno));
	x = written(ctx, 32 * MB);
	offload_ns(ctx, x);
	tp_stats_get(ctx, &st);
	ok(st.host_held == 40 * MB,
	   "the block prepared stays within pager.host_budget: held %llu MiB of 40",
	   (unsigned long long)(st.host_held / MB));
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);

	/* 8 GiB in use: a quarter would be 2 GiB, the bound is 16 x 64M. */
	ctx = tp_ctx_create("vmm.backend=sim,vmm.sim.profile=h200,"
			    "vmm.chunk_size=2M,pager.budget=3G,pager.rescue=0,"
			    "pager.swap_cache=0,pager.swap_ahead=64M");
	if (!ctx)
		bail_out("sim context: %s", strerror(errno));
	for (int i = 0; i < 4; i++) {
		x = written(ctx, 2048 * MB);
		offload_ns(ctx, x);
		big[i] = x;
	}
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(st.host_peak == 8192 * MB && st.host_held <= st.host_peak + 1024 * MB &&
	   st.host_held > st.host_peak,
	   "at most 16 times pager.swap_ahead prepared: held %llu MiB for %llu in use",
	   (unsigned long long)(st.host_held / MB),
	   (unsigned long long)(st.host_peak / MB));
	for (int i = 0; i < 4; i++)
		tp_tensor_free(ctx, big[i]);
	tp_ctx_destroy(ctx);
}

#define NR	24

/*
 * Tensors of 1 to 24 chunks written, offloaded one by one (swap grows
 * through many blocks, most prepared ahead: less than half of it is
 * obtained at once), then read back.
 */
static void with_data(void)
{
	size_t chunk = pt_probe();
	uint64_t seed = pt_seed();
	struct tp_tensor *t[NR];
	unsigned char *shadow[NR], *back;
	unsigned bad = 0, failed = 0;
	struct tp_stats st;
	struct tp_ctx *ctx;
	size_t blocks, at_once;

	ctx = pt_ctx("pager.budget=400C,pager.swap_ahead=2C,"
		     "pager.swap_cache=0");
	back = malloc(NR * chunk);
	if (!back)
		bail_out("no memory");
	for (unsigned i = 0; i < NR; i++) {
		size_t bytes = (i + 1) * chunk;

		shadow[i] = malloc(bytes);
		t[i] = tp_tensor_create(ctx, bytes, 0);
		if (!shadow[i] || !t[i])
			bail_out("tensor %u: %s", i, strerror(errno));
		pt_fill(shadow[i], bytes, seed + i);
		failed += tp_tensor_write(ctx, t[i], 0, shadow[i], bytes) != 0;
		failed += tp_tensor_offload(ctx, t[i]) != 0;
	}
	failed += tp_sync(ctx) != 0;
	blocks = ctx->pager->swap.nr_blocks;
	at_once = ctx->pager->swap.grown_bytes;
	for (unsigned i = 0; i < NR; i++) {
		size_t bytes = (i + 1) * chunk;

		failed += tp_tensor_read(ctx, t[i], 0, back, bytes) != 0;
		bad += memcmp(back, shadow[i], bytes) != 0;
	}
	tp_stats_get(ctx, &st);
	ok(!failed && st.offloads >= NR && at_once < st.host_peak / 2,
	   "%u tensors offloaded through %zu swap blocks, %zu of %llu bytes obtained at once (%u calls failed)",
	   NR, blocks, at_once, (unsigned long long)st.host_peak, failed);
	ok(!bad, "each came back as written (%u differ)", bad);
	ok(st.host_held > st.host_peak && st.host_peak == 300 * chunk,
	   "held %llu bytes for a peak of %llu",
	   (unsigned long long)st.host_held,
	   (unsigned long long)st.host_peak);
	for (unsigned i = 0; i < NR; i++) {
		tp_tensor_free(ctx, t[i]);
		free(shadow[i]);
	}
	free(back);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	pt_probe();
	plan_tests(11);
	sim_tests();
	with_data();
	return exit_status();
}
