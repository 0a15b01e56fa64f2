/* SPDX-License-Identifier: MIT */
/*
 * What the action counters of struct tp_stats count, and that their
 * documentation says so: an offload, a reload, an eviction or a prefetch
 * of a tensor counts once whatever its number of pages, its bytes going
 * to bytes_d2h or bytes_h2d; a recompute is one op replayed. A 6 MiB
 * tensor of three 2 MiB chunks on the host backend.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctl/stats.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	(2u << 20)
#define BYTES	(3 * CHUNK)
#define FLOATS	(BYTES / sizeof(float))

static struct tp_stats now(struct tp_ctx *ctx)
{
	struct tp_stats st;

	if (tp_sync(ctx) || tp_stats_get(ctx, &st))
		bail_out("tp_sync or tp_stats_get failed");
	return st;
}

/* The help of @key (tpagerctl -a, tpager.conf(5)) starts with @word. */
static void help_says(const char *key, const char *word)
{
	const struct tp_stat_key *k = tp_stat_find(key);

	ok(k && !strncmp(k->help, word, strlen(word)),
	   "%s is documented as counting %s: '%s'", key, word,
	   k ? k->help : "(no such key)");
}

int main(void)
{
	struct tops_scale_params sp = { 2.0f, 1.0f };
	struct tp_tensor *x, *y;
	struct tp_stats st;
	struct tp_ctx *ctx;
	float *a, *b;
	int bad = 0;

	plan_tests(20);
	unsetenv("TPAGER_CONF");
	unsetenv("TPAGER_OPTS");
	setenv("TPAGER_SYSCONF", "/nonexistent/tpager.conf", 1);

	/* The prefetcher off: only what the test asks for moves; rescues
	 * off: an eviction is undone by a recompute. */
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=2M,"
			    "pager.budget=64M,policy.prefetch=0,"
			    "pager.rescue=0");
	a = malloc(BYTES);
	b = malloc(BYTES);
	if (!ctx || !a || !b)
		bail_out("context or buffers");
	x = tops_input(ctx, FLOATS, 27);
	if (!x || tp_tensor_read(ctx, x, 0, a, BYTES))
		bail_out("input");
	st = now(ctx);
	ok(st.chunk_size == CHUNK && st.offloads == 0 && st.bytes_d2h == 0,
	   "2 MiB chunks, nothing offloaded yet");

	ok(tp_tensor_offload(ctx, x) == 0, "offload the 6 MiB input");
	st = now(ctx);
	ok(st.offloads == 1, "three pages offloaded: offloads %" PRIu64
	   " (one tensor)", st.offloads);
	ok(st.bytes_d2h == BYTES, "bytes_d2h %" PRIu64 " (6 MiB)", st.bytes_d2h);

	ok(tp_tensor_read(ctx, x, 0, b, BYTES) == 0 && !memcmp(a, b, BYTES),
	   "read it back");
	st = now(ctx);
	ok(st.reloads == 1, "three pages reloaded: reloads %" PRIu64
	   " (one tensor)", st.reloads);
	ok(st.bytes_h2d == BYTES, "bytes_h2d %" PRIu64 " (6 MiB)", st.bytes_h2d);

	y = tops_run1(ctx, &tops_scale, &sp, sizeof(sp), x, BYTES);
	if (!y)
		bail_out("scale");
	ok(tp_tensor_evict(ctx, y) == 0, "evict the 6 MiB output of an op");
	st = now(ctx);
	ok(st.evictions == 1 && st.partial_evictions == 0,
	   "three pages evicted: evictions %" PRIu64 " (one tensor, whole)",
	   st.evictions);
	ok(tp_tensor_read(ctx, y, 0, b, BYTES) == 0, "read the evicted output");
	for (size_t i = 0; i < FLOATS; i++)
		bad += b[i] != tops_ref_scale(a[i], sp.s, sp.c);
	st = now(ctx);
	ok(st.recomputes == 1 && !bad, "recomputes %" PRIu64
	   " (one op replayed for three pages), %d values wrong",
	   st.recomputes, bad);

	/* Out again and back ahead of use: a prefetch is a reload too. */
	ok(tp_tensor_offload(ctx, x) == 0 && tp_sync(ctx) == 0 &&
	   tp_tensor_prefetch(ctx, x) == 0, "offload the input, prefetch it");
	st = now(ctx);
	ok(st.offloads == 2 && st.prefetch_issued == 1 && st.reloads == 2,
	   "offloads %" PRIu64 ", prefetch_issued %" PRIu64 ", reloads %" PRIu64
	   " (tensors)", st.offloads, st.prefetch_issued, st.reloads);
	ok(st.bytes_d2h == (st.offloads - st.cache_offloads) * BYTES &&
	   st.bytes_h2d == 2 * BYTES,
	   "bytes_d2h %" PRIu64 " (%" PRIu64 " of the offloads found the swap"
	   " cache holding it), bytes_h2d %" PRIu64, st.bytes_d2h,
	   st.cache_offloads, st.bytes_h2d);

	help_says("stats.offloads", "tensors");
	help_says("stats.reloads", "tensors");
	help_says("stats.evictions", "tensors");
	help_says("stats.prefetch_issued", "tensors");
	help_says("stats.recomputes", "ops");
	help_says("stats.bytes_d2h", "bytes");

	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
	free(a);
	free(b);
	return exit_status();
}
