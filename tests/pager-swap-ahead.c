/* SPDX-License-Identifier: MIT */
/*
 * Host swap prepared ahead of need (pager.swap_ahead). On the sim's h200
 * profile, host memory costs the caller 60.4 ms per 512 MiB to fault in
 * and 9.7 to pin: the first offload pays both; each growth then has the
 * next pieces faulted in off the caller's thread, one after the other, so
 * that an offload made once one is ready pays the pinning only, and one
 * made at once waits for the rest of the oldest, not for all that is in
 * preparation; one lacking less than half a piece obtains it at once.
 * Without it every growth pays both. What is prepared is within
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
 * the two pieces prepared are ready), then 96 MiB at once (at once: the
 * rest of the first piece and the second, ready meanwhile; without
 * swap_ahead all of it is faulted in).
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
	ok(on.held_after_first == 160 * MB,
	   "then two pieces of 64 MiB are prepared ahead: stats.host_held %llu MiB",
	   (unsigned long long)(on.held_after_first / MB));
	/* A ready piece of 64 MiB: 1.21 ms of pinning, and the copy. */
	ok(on.later_ns * 2 < off.later_ns,
	   "an offload once a piece is ready pays its pinning only: %llu ns against %llu",
	   (unsigned long long)on.later_ns,
	   (unsigned long long)off.later_ns);
	ok(on.at_once_ns < off.at_once_ns,
	   "one right after takes the second piece, ready meanwhile: %llu ns against %llu",
	   (unsigned long long)on.at_once_ns,
	   (unsigned long long)off.at_once_ns);
	ok(on.peak == off.peak && on.peak == 160 * MB,
	   "the swap in use is the same (%llu MiB)",
	   (unsigned long long)(on.peak / MB));
	ok(off.held == off.peak && on.held > on.peak,
	   "held: %llu MiB without, %llu with pieces prepared ahead",
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
	   "what is prepared stays within pager.host_budget: held %llu MiB of 40",
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

/* What faulting in and pinning @bytes costs the caller on h200. */
static uint64_t at_once_ns(uint64_t bytes)
{
	return (uint64_t)((double)bytes * (60.4e6 + 9.7e6) / (512.0 * MB));
}

/*
 * 256 MiB offloaded: a quarter of it, 64 MiB, goes into preparation in
 * four pieces of 16 MiB, ready one after the other (1.9 ms each). A 16
 * MiB offload right after waits for the first piece only; a 4 MiB one
 * after it, lacking less than half a piece, obtains its swap at once
 * rather than wait for the second.
 */
static void pieces(void)
{
	struct tp_tensor *x, *y, *z;
	uint64_t y_ns, z_ns;
	struct tp_stats st;
	struct tp_ctx *ctx;

	ctx = tp_ctx_create("vmm.backend=sim,vmm.sim.profile=h200,"
			    "vmm.chunk_size=2M,pager.budget=1G,pager.rescue=0,"
			    "pager.swap_cache=0,policy.writeback=off,"
			    "pager.swap_ahead=16M");
	if (!ctx)
		bail_out("sim context: %s", strerror(errno));
	x = written(ctx, 256 * MB);
	y = written(ctx, 16 * MB);
	z = written(ctx, 4 * MB);
	offload_ns(ctx, x);
	tp_stats_get(ctx, &st);
	ok(st.host_held == (256 + 64) * MB,
	   "a quarter of the swap so far goes into preparation: held %llu MiB for 256",
	   (unsigned long long)(st.host_held / MB));
	y_ns = offload_ns(ctx, y);
	z_ns = offload_ns(ctx, z);
	diag("caller's ns: 16 MiB %llu, 4 MiB %llu",
	     (unsigned long long)y_ns, (unsigned long long)z_ns);
	ok(y_ns < at_once_ns(32 * MB),
	   "16 MiB at once waits for one piece of 16, not the 64 in preparation: %llu ns",
	   (unsigned long long)y_ns);
	ok(z_ns < at_once_ns(8 * MB),
	   "4 MiB lacking obtains its swap at once rather than wait for a piece: %llu ns",
	   (unsigned long long)z_ns);
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(st.host_peak == 276 * MB && st.host_held > st.host_peak &&
	   st.host_held <= st.host_peak + 16 * 16 * MB,
	   "held %llu MiB for %llu in use",
	   (unsigned long long)(st.host_held / MB),
	   (unsigned long long)(st.host_peak / MB));
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, z);
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
	plan_tests(15);
	sim_tests();
	pieces();
	with_data();
	return exit_status();
}
