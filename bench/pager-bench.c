/* SPDX-License-Identifier: MIT */
/*
 * pager-bench: the pager's hot paths.
 *
 *   acquire/release of a resident tensor, ns per pair
 *   offload + reload throughput against the raw vmm copy bandwidth
 *   range-cache hit rate and driver calls per iteration of a repeated
 *   allocation pattern (the target in steady state is zero)
 *
 * Usage: pager-bench [OPTS]   (OPTS: "key=value,...", e.g. vmm.backend=cuda)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "vmm/vmm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static struct tp_ctx *open_ctx(const char *base, const char *extra)
{
	char opts[512];
	struct tp_ctx *ctx;

	snprintf(opts, sizeof(opts), "%s%s%s", base, extra && *extra ? "," : "",
		 extra ? extra : "");
	ctx = tp_ctx_create(opts);
	if (!ctx) {
		fprintf(stderr, "pager-bench: tp_ctx_create(%s) failed\n", opts);
		exit(1);
	}
	return ctx;
}

/* @alone: without the policy's hooks (the pager's default LRU). */
static double bench_acquire(const char *extra, bool alone)
{
	struct tp_ctx *ctx = open_ctx("pager.budget=64M", extra);
	struct tp_tensor *t = tp_tensor_create(ctx, 8 << 20, 0);
	const unsigned n = 1000000;
	uint64_t t0;

	if (alone)
		tp_pager_set_victim_ops(ctx->pager, NULL);

	if (!t || !tp_tensor_acquire(ctx, t, TP_WRITE))
		exit(1);
	tp_tensor_release(ctx, t);
	t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		tp_tensor_acquire(ctx, t, TP_READ);
		tp_tensor_release(ctx, t);
	}
	t0 = now_ns() - t0;
	tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
	return (double)t0 / n;
}

struct bw {
	double offload, reload, raw_d2h, raw_h2d;
	double copies;		/* copy calls per offload + reload */
};

static void bench_bandwidth(const char *extra, size_t bytes, struct bw *bw)
{
	struct tp_ctx *ctx = open_ctx("pager.budget=512M,pager.high_watermark=100", extra);
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, 0);
	struct tp_vmm *vmm = ctx->vmm;
	const int reps = 5;
	uint64_t off_ns = 0, re_ns = 0, d2h_ns = 0, h2d_ns = 0, t0, c0 = 0;
	void *host, *addr;

	host = tp_vmm_host_alloc(vmm, bytes);
	addr = tp_tensor_acquire(ctx, t, TP_WRITE);
	if (!t || !host || !addr)
		exit(1);
	if (tp_vmm_has_data(vmm))
		memset(host, 1, bytes);
	tp_tensor_release(ctx, t);
	/* Round 0 warms up: swap buffers and chunks are created once. */
	for (int r = -1; r < reps; r++) {
		if (r == 0)
			off_ns = re_ns = d2h_ns = h2d_ns = 0;
		c0 = vmm->stats.call[TP_CALL_COPY].calls;
		t0 = now_ns();
		tp_tensor_offload(ctx, t);
		tp_sync(ctx);
		off_ns += now_ns() - t0;
		t0 = now_ns();
		tp_tensor_acquire(ctx, t, TP_READ);
		tp_sync(ctx);
		re_ns += now_ns() - t0;
		tp_tensor_release(ctx, t);
		bw->copies = (double)(vmm->stats.call[TP_CALL_COPY].calls - c0);

		/* The raw copies the pager's rest on, same bytes, same streams. */
		t0 = now_ns();
		tp_vmm_copy_d2h(vmm, host, (uintptr_t)addr, bytes, TP_STREAM_D2H);
		tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
		d2h_ns += now_ns() - t0;
		t0 = now_ns();
		tp_vmm_copy_h2d(vmm, (uintptr_t)addr, host, bytes, TP_STREAM_H2D);
		tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
		h2d_ns += now_ns() - t0;
	}
	bw->offload = (double)bytes * reps / off_ns;
	bw->reload = (double)bytes * reps / re_ns;
	bw->raw_d2h = (double)bytes * reps / d2h_ns;
	bw->raw_h2d = (double)bytes * reps / h2d_ns;
	tp_vmm_host_free(vmm, host, bytes);
	tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
}

struct cache_res {
	double hit_rate, calls_first, calls_steady;
	uint64_t iters;
};

static void bench_cache(const char *extra, const char *cache, struct cache_res *res)
{
	static const double pattern[] = { 4, 1.5, 8, 0.75, 2, 16, 3, 1 };
	enum { NPAT = sizeof(pattern) / sizeof(pattern[0]), ITERS = 200 };
	struct tp_ctx *ctx = open_ctx("pager.budget=256M,pager.high_watermark=100", extra);
	struct tp_tensor *t[NPAT];
	struct tp_stats s0, s1, s2;
	size_t chunk;

	(void)cache;
	tp_stats_get(ctx, &s0);
	chunk = s0.chunk_size;
	for (int it = 0; it < ITERS; it++) {
		for (int i = 0; i < NPAT; i++) {
			t[i] = tp_tensor_create(ctx, (size_t)(pattern[i] * chunk), 0);
			tp_tensor_acquire(ctx, t[i], TP_WRITE);
		}
		for (int i = 0; i < NPAT; i++) {
			tp_tensor_release(ctx, t[i]);
			tp_tensor_free(ctx, t[i]);
		}
		if (it == 0)
			tp_stats_get(ctx, &s1);
	}
	tp_stats_get(ctx, &s2);
	res->hit_rate = (double)s2.range_cache_hits /
			(s2.range_cache_hits + s2.range_cache_misses);
	res->calls_first = (double)(s1.driver_calls - s0.driver_calls);
	res->calls_steady = (double)(s2.driver_calls - s1.driver_calls) / (ITERS - 1);
	res->iters = ITERS;
	tp_ctx_destroy(ctx);
}

int main(int argc, char **argv)
{
	const char *extra = argc > 1 ? argv[1] : "";
	char nocache[512];
	struct cache_res on, off;
	struct bw bw;
	double ns, ns_alone;
	size_t bytes = 64 << 20;

	ns = bench_acquire(extra, false);
	ns_alone = bench_acquire(extra, true);
	bench_bandwidth(extra, bytes, &bw);
	bench_cache(extra, "", &on);
	snprintf(nocache, sizeof(nocache), "%s%spager.range_cache=0", extra,
		 *extra ? "," : "");
	bench_cache(nocache, "", &off);

	printf("pager-bench (%s)\n", *extra ? extra : "defaults");
	printf("%-44s %14s\n", "measure", "value");
	printf("%-44s %14.1f\n", "acquire+release, resident tensor (ns)", ns);
	printf("%-44s %14.1f\n", "  the same, pager alone, no policy hooks", ns_alone);
	printf("%-44s %14.2f\n", "offload 64 MiB, to swap (GB/s)", bw.offload);
	printf("%-44s %14.2f\n", "raw vmm copy d2h (GB/s)", bw.raw_d2h);
	printf("%-44s %14.2f\n", "offload / raw d2h", bw.offload / bw.raw_d2h);
	printf("%-44s %14.2f\n", "reload 64 MiB, from swap (GB/s)", bw.reload);
	printf("%-44s %14.2f\n", "raw vmm copy h2d (GB/s)", bw.raw_h2d);
	printf("%-44s %14.2f\n", "reload / raw h2d", bw.reload / bw.raw_h2d);
	printf("%-44s %14.0f\n", "copies per offload + reload (64 MiB)", bw.copies);
	printf("%-44s %14.3f\n", "range cache hit rate", on.hit_rate);
	printf("%-44s %14.0f\n", "driver calls, first iteration", on.calls_first);
	printf("%-44s %14.2f\n", "driver calls / iteration, steady", on.calls_steady);
	printf("%-44s %14.2f\n", "driver calls / iteration, cache off", off.calls_steady);
	return 0;
}
