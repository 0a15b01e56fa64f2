/* SPDX-License-Identifier: MIT */
/*
 * The contiguous pool on the sim is the caching allocator the baselines
 * ran on: its memory, once made, is never mapped again. Tensors of sizes
 * that change every round, made, written, released and freed, cost the
 * h200 profile's driver time on the chunked pool at every round (a freed
 * range serves only the next tensor of its size), and on the contiguous
 * pool only the first round's, as its chunks are first used: each a
 * share of a 2 MiB handle's creation, no map or unmap priced. The
 * contiguous pool has no range cache, and setting a pager key at run
 * time does not give it one (the freed block goes back to the pool).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "tests/tap.h"

#define ROUNDS	4

/* A tensor of @bytes made, written, released and freed: 0 or -errno. */
static int churn(struct tp_ctx *ctx, size_t bytes)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, 0);
	int ret;

	if (!t || !tp_tensor_acquire(ctx, t, TP_WRITE))
		ret = -ENOMEM;
	else
		ret = tp_tensor_release(ctx, t);
	if (t)
		tp_tensor_free(ctx, t);
	return ret;
}

/* A sim context on the pool @mode (chunks of 64 KiB) with @keys more;
 * NULL with errno set. */
static struct tp_ctx *pool_ctx(const char *mode, const char *keys)
{
	char opts[256];

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=64K,vmm.mode=%s,%s", mode,
		 keys);
	return tp_ctx_create(opts);
}

/* Driver time after each round of tensors of 3, 5, 9 and 17 MiB and a
 * round's worth more, the first round's the largest: no size repeats. */
static int rounds(const char *mode, uint64_t ns[ROUNDS])
{
	struct tp_ctx *ctx = pool_ctx(mode, "vmm.sim.profile=h200,"
					 "pager.budget=256M");
	struct tp_stats st = { 0 };
	int ret = 0;

	if (!ctx)
		return -errno;
	for (unsigned r = 0; r < ROUNDS && !ret; r++) {
		for (unsigned k = 0; k < 4 && !ret; k++) {
			size_t mib = (2u << k) + 1 + ROUNDS - r;

			ret = churn(ctx, mib << 20);
		}
		if (!ret)
			ret = tp_stats_get(ctx, &st);
		ns[r] = st.driver_ns;
	}
	tp_ctx_destroy(ctx);
	return ret;
}

/* Range cache hits for a tensor made, freed and made again at its size,
 * after a pager key was set at run time (tp_pager_set_conf()). */
static int hits_after_ctl(const char *mode, uint64_t *hits)
{
	struct tp_ctx *ctx = pool_ctx(mode, "pager.budget=64M");
	struct tp_stats st = { 0 };
	int ret;

	if (!ctx)
		return -errno;
	ret = tp_ctl_set(ctx, "pager.move_evicted", "1");
	for (unsigned i = 0; i < 2 && !ret; i++)
		ret = churn(ctx, 3u << 20);
	if (!ret)
		ret = tp_stats_get(ctx, &st);
	*hits = st.range_cache_hits;
	tp_ctx_destroy(ctx);
	return ret;
}

int main(void)
{
	uint64_t ch[ROUNDS] = { 0 }, co[ROUNDS] = { 0 }, hit_ch = 0, hit_co = 1;
	int rc_ch, rc_co;

	plan_tests(4);
	rc_ch = rounds("chunked", ch);
	rc_co = rounds("contiguous", co);
	ok(!rc_ch && !rc_co, "both pools: %d rounds of tensors made, written "
	   "and freed (%s, %s)", ROUNDS, strerror(-rc_ch), strerror(-rc_co));
	ok(!rc_ch && ch[ROUNDS - 1] - ch[0] > 0,
	   "chunked: driver time after the first round (%llu ns)",
	   (unsigned long long)(ch[ROUNDS - 1] - ch[0]));
	ok(!rc_co && co[0] > 0 && co[ROUNDS - 1] == co[0],
	   "contiguous: the first round's growth (%llu ns), then nothing",
	   (unsigned long long)co[0]);
	rc_ch = hits_after_ctl("chunked", &hit_ch);
	rc_co = hits_after_ctl("contiguous", &hit_co);
	ok(!rc_ch && !rc_co && hit_ch == 1 && hit_co == 0,
	   "after tp_ctl_set of a pager key, a freed range serves the next of "
	   "its size on the chunked pool (%llu hit) and none on the "
	   "contiguous one (%llu)", (unsigned long long)hit_ch,
	   (unsigned long long)hit_co);
	return exit_status();
}
