/* SPDX-License-Identifier: MIT */
/*
 * One tensor through every way of leaving and coming back, checked byte
 * for byte: write, offload, read, prefetch, acquire, range acquire.
 */
#include "tests/dev-copy.h"
#include "tests/pager-util.h"

int main(void)
{
	struct tp_ctx *ctx;
	struct tp_tensor *t;
	struct tp_stats st;
	unsigned char *src, *dst;
	size_t chunk, bytes;
	void *p, *q;

	pt_probe();
	plan_tests(31);
	ctx = pt_ctx("pager.budget=128C,policy.prefetch=0");
	chunk = pt_chunk(ctx);
	bytes = 3 * chunk + chunk / 3;
	src = malloc(bytes);
	dst = malloc(bytes);
	pt_fill(src, bytes, 42);

	t = tp_tensor_create(ctx, bytes, 0);
	ok(t != NULL, "create %zu bytes", bytes);
	ok(tp_tensor_size(t) == bytes, "size");
	ok_rc(tp_tensor_write(ctx, t, 0, src, bytes), "write");
	memset(dst, 0, bytes);
	ok_rc(tp_tensor_read(ctx, t, 0, dst, bytes), "read");
	ok(!memcmp(src, dst, bytes), "read back what was written");

	ok_rc(tp_tensor_offload(ctx, t), "offload");
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(st.offloads == 1 && st.host_bytes == 4 * chunk,
	   "one offload, 4 pages in swap (%" PRIu64 ")", st.host_bytes);
	ok(st.bytes_d2h == bytes, "bytes_d2h %" PRIu64, st.bytes_d2h);
	memset(dst, 0, bytes);
	ok_rc(tp_tensor_read(ctx, t, 0, dst, bytes), "read offloaded");
	ok(!memcmp(src, dst, bytes), "contents survive offload and reload");
	tp_stats_get(ctx, &st);
	ok(st.reloads == 1 && st.bytes_h2d == bytes, "one reload of %zu bytes",
	   bytes);

	ok_rc(tp_tensor_offload(ctx, t), "offload again");
	ok_rc(tp_tensor_prefetch(ctx, t), "prefetch");
	ok_rc(tp_tensor_prefetch(ctx, t), "second prefetch is a no-op");
	p = tp_tensor_acquire(ctx, t, TP_READ);
	ok(p != NULL, "acquire after prefetch");
	tp_stats_get(ctx, &st);
	ok(st.prefetch_issued == 1 && st.reloads == 2,
	   "prefetch issued once (%" PRIu64 "), reloads %" PRIu64,
	   st.prefetch_issued, st.reloads);
	ok(st.prefetch_hits + st.prefetch_late == 1, "acquire used the prefetch");
	memset(dst, 0, bytes);
	ok(p && !dev_load(ctx, dst, p, bytes) && !memcmp(dst, src, bytes),
	   "acquired memory holds the data");
	ok(tp_tensor_offload(ctx, t) == -EBUSY, "offload of a pinned tensor: -EBUSY");
	ok(tp_tensor_free(ctx, t) == -EBUSY, "free of a pinned tensor: -EBUSY");
	ok_rc(tp_tensor_release(ctx, t), "release");

	/* Range: only the pages it covers come back. */
	ok_rc(tp_tensor_offload(ctx, t), "offload for range");
	q = tp_tensor_acquire_range(ctx, t, chunk + 10, 100, TP_READ);
	ok(q != NULL, "acquire a range inside page 1");
	tp_stats_get(ctx, &st);
	ok(st.bytes_h2d == 2 * bytes + chunk, "only that page reloaded (%" PRIu64 ")",
	   st.bytes_h2d);
	ok_rc(tp_tensor_release_range(ctx, t, chunk + 10, 100), "release range");
	ok(tp_tensor_evict(ctx, t) == -EPERM, "evict of an uncomputable tensor: -EPERM");
	ok_rc(tp_tensor_free(ctx, t), "free");

	tp_stats_get(ctx, &st);
	ok(st.copy_d2h_ns > 0 && st.copy_h2d_ns > 0, "copies were timed");
	tp_ctx_destroy(ctx);

	/* sim holds no data: copies in and out are refused, paging works. */
	ctx = tp_ctx_create("vmm.backend=sim,pager.rescue=0,vmm.chunk_size=64K,pager.budget=64M");
	t = ctx ? tp_tensor_create(ctx, bytes, 0) : NULL;
	ok(t && tp_tensor_write(ctx, t, 0, src, bytes) == -ENOTSUP &&
	   tp_tensor_read(ctx, t, 0, dst, bytes) == -ENOTSUP,
	   "sim: write and read -ENOTSUP");
	ok(t && tp_tensor_acquire(ctx, t, TP_WRITE) && !tp_tensor_release(ctx, t) &&
	   !tp_tensor_offload(ctx, t) && tp_tensor_acquire(ctx, t, TP_READ) &&
	   !tp_tensor_release(ctx, t), "sim: acquire, offload, reload");
	if (t)
		tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
	errno = 0;
	ok(!tp_ctx_create("pager.no_such_key=1") && errno == EINVAL,
	   "unknown key: NULL, EINVAL");
	free(src);
	free(dst);
	return exit_status();
}
