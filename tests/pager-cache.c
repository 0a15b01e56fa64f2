/* SPDX-License-Identifier: MIT */
/*
 * The range cache: a repeated allocation pattern makes no driver call per
 * iteration once warm, also where it frees more than a quarter of device
 * memory (the default's cap is the pool itself); cached ranges give their
 * chunks back before any tensor is made to leave; with
 * pager.range_cache=0 every iteration maps.
 */
#include "tests/pager-util.h"

static const size_t pattern[] = { 3, 1, 5, 2, 1 };	/* in chunks, +odd bytes */
#define NPAT (sizeof(pattern) / sizeof(pattern[0]))

static int iteration(struct tp_ctx *ctx, size_t chunk)
{
	struct tp_tensor *t[NPAT];

	for (size_t i = 0; i < NPAT; i++) {
		size_t bytes = pattern[i] * chunk - 7 * i;

		t[i] = tp_tensor_create(ctx, bytes, 0);
		if (!t[i] || !tp_tensor_acquire(ctx, t[i], TP_WRITE))
			return -1;
	}
	for (size_t i = 0; i < NPAT; i++)
		if (tp_tensor_release(ctx, t[i]) || tp_tensor_free(ctx, t[i]))
			return -1;
	return 0;
}

int main(void)
{
	struct tp_stats a, b;
	struct tp_ctx *ctx;
	struct tp_tensor *keep, *big;
	char opts[160];
	size_t chunk;
	int rc = 0;

	pt_probe();
	plan_tests(12);
	ctx = pt_ctx("pager.budget=32C,pager.high_watermark=100");
	chunk = pt_chunk(ctx);
	for (int i = 0; i < 3; i++)
		rc |= iteration(ctx, chunk);
	/* The driver thread's maps of the warm-up made and counted. */
	rc |= tp_sync(ctx);
	tp_stats_get(ctx, &a);
	for (int i = 0; i < 10; i++)
		rc |= iteration(ctx, chunk);
	rc |= tp_sync(ctx);
	tp_stats_get(ctx, &b);
	ok(rc == 0, "10 iterations of the pattern ran");
	ok(b.driver_calls == a.driver_calls, "zero driver calls in 10 warm iterations (%" PRIu64 ")",
	   b.driver_calls - a.driver_calls);
	ok(b.range_cache_hits - a.range_cache_hits == 10 * NPAT,
	   "every tensor took a cached range (%" PRIu64 " hits)",
	   b.range_cache_hits - a.range_cache_hits);
	ok(b.range_cache_misses == a.range_cache_misses, "no miss once warm");
	ok(b.chunks_mapped == 12, "the cache holds the pattern's 12 chunks (%" PRIu64 ")",
	   b.chunks_mapped);

	/* Under pressure the cache goes first: nothing is offloaded. */
	keep = tp_tensor_create(ctx, 4 * chunk, 0);
	ok(keep && tp_tensor_acquire(ctx, keep, TP_WRITE) &&
	   !tp_tensor_release(ctx, keep), "a live resident tensor");
	tp_stats_get(ctx, &a);
	big = tp_tensor_create(ctx, a.budget_bytes - 4 * chunk - 2 * chunk, 0);
	ok(big && tp_tensor_acquire(ctx, big, TP_WRITE), "a tensor that needs cached chunks");
	tp_stats_get(ctx, &b);
	ok(b.offloads == 0 && b.evictions == 0,
	   "room came from the cache, not from the live tensor");
	tp_tensor_release(ctx, big);
	tp_tensor_free(ctx, big);
	tp_tensor_free(ctx, keep);
	tp_ctx_destroy(ctx);

	/*
	 * The pattern's 12 chunks are over a quarter of a 32-chunk device:
	 * a cap below the pool would unmap and map again every iteration.
	 */
	snprintf(opts, sizeof(opts),
		 "vmm.device_memory=%zu,pager.budget=100%%,pager.high_watermark=100",
		 32 * chunk);
	ctx = pt_ctx(opts);
	rc = 0;
	for (int i = 0; i < 3; i++)
		rc |= iteration(ctx, chunk);
	tp_stats_get(ctx, &a);
	for (int i = 0; i < 10; i++)
		rc |= iteration(ctx, chunk);
	tp_sync(ctx);
	tp_stats_get(ctx, &b);
	ok(rc == 0 && b.driver_calls == a.driver_calls &&
	   b.range_cache_misses == a.range_cache_misses,
	   "a pattern freeing %zu of 32 chunks of device memory: zero driver calls warm (%" PRIu64 ")",
	   (size_t)12, b.driver_calls - a.driver_calls);
	tp_ctx_destroy(ctx);

	/* Without the cache, every iteration maps and unmaps. */
	ctx = pt_ctx("pager.budget=32C,pager.range_cache=0");
	rc = iteration(ctx, chunk);
	tp_stats_get(ctx, &a);
	rc |= iteration(ctx, chunk);
	tp_sync(ctx);
	tp_stats_get(ctx, &b);
	ok(rc == 0, "pattern without the cache");
	ok(b.driver_calls - a.driver_calls >= 2 * NPAT,
	   "without the cache an iteration makes %" PRIu64 " driver calls",
	   b.driver_calls - a.driver_calls);
	ok(b.range_cache_hits == 0, "no hits with the cache off");
	tp_ctx_destroy(ctx);
	return exit_status();
}
