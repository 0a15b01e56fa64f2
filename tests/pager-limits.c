/* SPDX-License-Identifier: MIT */
/*
 * Limits: host swap full (-ENOSPC, the tensor stays resident), nothing
 * able to leave (-ENOMEM, nothing changed; stats.swap_full counts the
 * failures that host swap made, not those of pinned memory), and
 * pager.high_watermark releasing early down to pager.low_watermark.
 */
#include "tests/pager-util.h"

static bool same_moves(const struct tp_stats *a, const struct tp_stats *b)
{
	return a->offloads == b->offloads && a->reloads == b->reloads &&
	       a->evictions == b->evictions &&
	       a->chunks_mapped == b->chunks_mapped &&
	       a->host_bytes == b->host_bytes && a->bytes_d2h == b->bytes_d2h;
}

static struct tp_tensor *filled(struct tp_ctx *ctx, size_t bytes,
				uint64_t seed, unsigned char **shadow)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, 0);

	*shadow = malloc(bytes);
	pt_fill(*shadow, bytes, seed);
	if (!t || tp_tensor_write(ctx, t, 0, *shadow, bytes))
		bail_out("cannot fill a tensor of %zu bytes", bytes);
	return t;
}

static bool reads_back(struct tp_ctx *ctx, struct tp_tensor *t,
		       const unsigned char *shadow)
{
	size_t n = tp_tensor_size(t);
	unsigned char *buf = malloc(n);
	bool same = !tp_tensor_read(ctx, t, 0, buf, n) && !memcmp(buf, shadow, n);

	free(buf);
	return same;
}

static void test_enospc(void)
{
	/* The swap cache off: a reload gives its swap back. */
	struct tp_ctx *ctx = pt_ctx("pager.budget=16C,pager.host_budget=2C,"
				    "pager.swap_cache=0");
	size_t chunk = pt_chunk(ctx);
	unsigned char *sa, *sb;
	struct tp_tensor *a, *b;
	struct tp_stats s0, s1;

	a = filled(ctx, 3 * chunk, 1, &sa);
	b = filled(ctx, 2 * chunk - 5, 2, &sb);
	tp_stats_get(ctx, &s0);
	ok(tp_tensor_offload(ctx, a) == -ENOSPC, "3 chunks into a 2-chunk swap: -ENOSPC");
	tp_stats_get(ctx, &s1);
	ok(same_moves(&s0, &s1) && s1.host_bytes == 0,
	   "the tensor stayed resident, swap untouched");
	ok(reads_back(ctx, a, sa), "its data is intact");
	ok_rc(tp_tensor_offload(ctx, b), "2 chunks fit");
	tp_sync(ctx);
	tp_stats_get(ctx, &s1);
	ok(s1.host_bytes == 2 * chunk && s1.host_budget == 2 * chunk,
	   "swap full: %" PRIu64 " of %" PRIu64, s1.host_bytes, s1.host_budget);
	ok(tp_tensor_offload(ctx, a) == -ENOSPC, "and now full");
	ok(reads_back(ctx, b, sb) && reads_back(ctx, a, sa), "both read back");
	tp_stats_get(ctx, &s1);
	ok(s1.host_bytes == 0, "reload emptied the swap");
	tp_tensor_free(ctx, a);
	tp_tensor_free(ctx, b);
	free(sa);
	free(sb);
	tp_ctx_destroy(ctx);
}

static void test_enomem(void)
{
	struct tp_ctx *ctx = pt_ctx("pager.budget=4C,pager.host_budget=2C,pager.high_watermark=100");
	size_t chunk = pt_chunk(ctx);
	unsigned char *sa, *sb, *sc, *sd;
	struct tp_tensor *a, *b, *c, *d;
	struct tp_stats s0, s1;
	void *p;

	/* 4-chunk budget: a and b fill it, both pinned. */
	a = filled(ctx, 2 * chunk, 3, &sa);
	b = filled(ctx, 2 * chunk, 4, &sb);
	c = tp_tensor_create(ctx, chunk, 0);
	ok(tp_tensor_acquire(ctx, a, TP_READ) && tp_tensor_acquire(ctx, b, TP_READ),
	   "pin everything resident");
	sc = malloc(chunk);
	pt_fill(sc, chunk, 5);
	tp_stats_get(ctx, &s0);
	ok(tp_tensor_write(ctx, c, 0, sc, chunk) == -ENOMEM,
	   "nothing can leave: -ENOMEM");
	errno = 0;
	p = tp_tensor_acquire(ctx, c, TP_WRITE);
	ok(!p && errno == ENOMEM, "acquire: NULL, ENOMEM");
	tp_stats_get(ctx, &s1);
	ok(same_moves(&s0, &s1), "nothing moved");
	ok(s1.swap_full == 0, "pinned memory is not swap's doing (swap_full %" PRIu64 ")",
	   s1.swap_full);
	tp_tensor_release(ctx, a);
	tp_tensor_release(ctx, b);

	/* Unpinned, but swap has room for one of them (2 chunks) and nothing
	 * is evictable: 3 chunks can never be found, so nothing is sent
	 * away. */
	d = tp_tensor_create(ctx, 3 * chunk, 0);
	sd = malloc(3 * chunk);
	pt_fill(sd, 3 * chunk, 6);
	tp_stats_get(ctx, &s0);
	ok(tp_tensor_write(ctx, d, 0, sd, 3 * chunk) == -ENOMEM,
	   "3 chunks when 2 can leave: -ENOMEM");
	tp_stats_get(ctx, &s1);
	ok(same_moves(&s0, &s1), "nothing was offloaded in vain");
	ok(s1.swap_full == 1, "swap without room for both counted once (swap_full %" PRIu64 ")",
	   s1.swap_full);
	ok(reads_back(ctx, a, sa) && reads_back(ctx, b, sb), "a and b intact");
	ok_rc(tp_tensor_write(ctx, c, 0, sc, chunk), "1 chunk: a tensor leaves for it");
	ok(reads_back(ctx, c, sc), "c reads back");
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, d);
	ok(reads_back(ctx, a, sa) && reads_back(ctx, b, sb),
	   "a and b read back through the swap");
	tp_tensor_free(ctx, a);
	tp_tensor_free(ctx, b);
	free(sa);
	free(sb);
	free(sc);
	free(sd);
	tp_ctx_destroy(ctx);
}

static void test_watermark(void)
{
	/* DELTA's policy: the overlap filter (the default) releases at
	 * demand only. */
	struct tp_ctx *ctx = pt_ctx("pager.budget=8C,pager.high_watermark=50,pager.low_watermark=25,pager.range_cache=0,policy.filter=delta,policy.director=delta");
	size_t chunk = pt_chunk(ctx);
	unsigned char *s[5];
	struct tp_tensor *t[5];
	struct tp_stats st;
	bool same = true;

	/* 8-chunk budget: 4 chunks is 50%, not above it. */
	for (int i = 0; i < 4; i++)
		t[i] = filled(ctx, chunk, 10 + i, &s[i]);
	tp_stats_get(ctx, &st);
	ok(st.offloads == 0, "at the high watermark nothing leaves");
	t[4] = filled(ctx, chunk, 14, &s[4]);
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(st.offloads == 3 && st.host_bytes == 3 * chunk,
	   "above it, the 3 least recently used left (offloads %" PRIu64 ")",
	   st.offloads);
	ok(st.chunks_mapped == 2, "down to the low watermark: 2 of 8 chunks (%" PRIu64 ")",
	   st.chunks_mapped);
	for (int i = 0; i < 5; i++) {
		same &= reads_back(ctx, t[i], s[i]);
		tp_tensor_free(ctx, t[i]);
		free(s[i]);
	}
	ok(same, "all five read back");
	tp_ctx_destroy(ctx);
}

int main(void)
{
	pt_probe();
	plan_tests(24);
	test_enospc();
	test_enomem();
	test_watermark();
	return exit_status();
}
