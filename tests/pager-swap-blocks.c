/* SPDX-License-Identifier: MIT */
/*
 * Host swap comes in blocks, one host allocation each, and two blocks may
 * touch: a new mmap often lands right below the last. A tensor whose pages
 * get one buffer from each, the lower block's last and the upper's first,
 * has buffers that look adjacent, but the driver refuses one copy across
 * two pinned allocations (CUDA_ERROR_INVALID_VALUE; the stand-in driver of
 * tests/vmm-cuda-fake.sh enforces it). The offload and the reload must
 * copy such pages apart, and the bytes come back as written.
 *
 * The case is built a few times over, with growing tensors: block B1 of
 * one buffer, freed; then a tensor of n pages takes B1's buffer and a new
 * block B2 of n - 1 right below it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/pager-util.h"

static struct tp_ctx *ctx;
static size_t chunk;

static int write_pattern(struct tp_tensor *t, size_t bytes, uint64_t seed,
			 unsigned char *shadow)
{
	pt_fill(shadow, bytes, seed);
	return tp_tensor_write(ctx, t, 0, shadow, bytes);
}

/* One round: returns 0 when every step worked and the bytes match. */
static int round_trip(unsigned pages, uint64_t seed, char *why, size_t wlen)
{
	size_t bytes = pages * chunk;
	unsigned char *shadow = malloc(bytes), *back = malloc(bytes);
	struct tp_tensor *one, *t;
	int ret;

	if (!shadow || !back)
		bail_out("no memory");
	one = tp_tensor_create(ctx, chunk, 0);
	t = tp_tensor_create(ctx, bytes, 0);
	if (!one || !t)
		bail_out("tensors: %s", strerror(errno));
	ret = write_pattern(one, chunk, seed, shadow);
	if (!ret)
		ret = tp_tensor_offload(ctx, one) ?: tp_sync(ctx);
	/* Its buffer is free again, the only one of its block. */
	if (!ret)
		ret = tp_tensor_free(ctx, one);
	if (ret) {
		snprintf(why, wlen, "%u: the one-page tensor: %s", pages,
			 tp_strerror(ret));
		goto out;
	}
	ret = write_pattern(t, bytes, seed + 1, shadow);
	if (!ret)
		ret = tp_tensor_offload(ctx, t) ?: tp_sync(ctx);
	if (ret) {
		snprintf(why, wlen, "%u pages: offload: %s", pages,
			 tp_strerror(ret));
		goto out;
	}
	ret = tp_tensor_read(ctx, t, 0, back, bytes);
	if (ret) {
		snprintf(why, wlen, "%u pages: reload: %s", pages,
			 tp_strerror(ret));
		goto out;
	}
	if (memcmp(back, shadow, bytes)) {
		snprintf(why, wlen, "%u pages: bytes differ", pages);
		ret = -EIO;
	}
out:
	tp_tensor_free(ctx, t);
	free(shadow);
	free(back);
	return ret;
}

int main(void)
{
	uint64_t seed = pt_seed();
	char why[160] = "";
	struct tp_stats st;
	int bad = 0;

	pt_probe();
	plan_tests(2);
	/* The swap cache off: each offload takes buffers anew. */
	/* Blocks of the sizes taken: none prepared ahead. */
	ctx = pt_ctx("pager.budget=32C,pager.swap_cache=0,pager.swap_ahead=0");
	chunk = pt_chunk(ctx);
	for (unsigned pages = 2; pages <= 6 && !bad; pages++)
		bad = round_trip(pages, seed + pages, why, sizeof(why));
	ok(!bad, "pages in two host blocks offloaded and back, byte for byte%s%s",
	   bad ? ": " : "", why);
	tp_stats_get(ctx, &st);
	ok(st.offloads >= 10 && st.reloads >= 5,
	   "every round went out and came back (%llu offloads, %llu reloads)",
	   (unsigned long long)st.offloads, (unsigned long long)st.reloads);
	tp_ctx_destroy(ctx);
	return exit_status();
}
