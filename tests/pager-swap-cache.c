/* SPDX-License-Identifier: MIT */
/*
 * The swap cache: a reloaded tensor keeps its host copy (pager.swap_cache)
 * and a writeback makes one ahead of need; offloading then copies nothing,
 * and every write drops the copy first, so that what comes back is always
 * what was last written, byte for byte. A full host swap gives cached
 * copies up to an offload; a writeback never pushes one out.
 */
#include "config.h"

#include <pthread.h>
#include <time.h>

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/dev-copy.h"
#include "tests/pager-util.h"
#include "vmm/backend_host.h"

static struct tp_stats stats(struct tp_ctx *ctx)
{
	struct tp_stats st;

	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	return st;
}

/* Whether @t reads back as @want. */
static bool reads_as(struct tp_ctx *ctx, struct tp_tensor *t,
		     const unsigned char *want)
{
	size_t n = tp_tensor_size(t);
	unsigned char *got = malloc(n);
	bool same;

	if (!got)
		return false;
	same = !tp_tensor_read(ctx, t, 0, got, n) && !memcmp(got, want, n);
	free(got);
	return same;
}

static struct tp_tensor *filled(struct tp_ctx *ctx, unsigned char *buf,
				size_t n, uint64_t seed)
{
	struct tp_tensor *t = tp_tensor_create(ctx, n, 0);

	pt_fill(buf, n, seed);
	if (!t || tp_tensor_write(ctx, t, 0, buf, n))
		bail_out("a tensor of %zu bytes: %s", n, strerror(errno));
	return t;
}

/* Reloads keep their copy; writes drop it, a whole acquire or a range. */
static void reload_and_write(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("pager.budget=16C,pager.swap_cache=1");
	size_t chunk = pt_chunk(ctx), n = 3 * chunk + 100;
	unsigned char *a = malloc(n), *patch = malloc(17);
	struct tp_stats s0, s1;
	struct tp_tensor *t;
	unsigned char *p;

	if (!a || !patch)
		bail_out("out of memory");
	t = filled(ctx, a, n, seed);
	ok(!tp_tensor_offload(ctx, t) && reads_as(ctx, t, a) &&
	   stats(ctx).host_cached_bytes == 4 * chunk,
	   "a reloaded tensor reads back and keeps its 4 pages' copy");

	s0 = stats(ctx);
	ok(!tp_tensor_offload(ctx, t), "it is offloaded again");
	s1 = stats(ctx);
	ok(s1.bytes_d2h == s0.bytes_d2h && s1.cache_offloads == 1 &&
	   s1.host_cached_bytes == 0,
	   "copying nothing (%" PRIu64 " bytes out, %" PRIu64 " cached)",
	   s1.bytes_d2h - s0.bytes_d2h, s1.host_cached_bytes);
	ok(reads_as(ctx, t, a), "and reads back byte for byte");

	/* A write to page 1 only: its copy goes, the others' stay. */
	pt_fill(patch, 17, seed + 1);
	memcpy(a + chunk + 5, patch, 17);
	ok(!tp_tensor_write(ctx, t, chunk + 5, patch, 17) &&
	   stats(ctx).host_cached_bytes == 3 * chunk,
	   "a write to one page drops that page's copy only");
	s0 = stats(ctx);
	ok(!tp_tensor_offload(ctx, t) &&
	   stats(ctx).bytes_d2h - s0.bytes_d2h == chunk,
	   "the next offload copies that page alone");
	ok(reads_as(ctx, t, a), "what comes back has the write in it");

	/* Written at the address of a whole acquire, as an op writes it. */
	p = tp_tensor_acquire(ctx, t, TP_WRITE);
	ok(p && stats(ctx).host_cached_bytes == 0,
	   "an acquire for writing drops every copy");
	if (p) {
		pt_fill(a, n, seed + 2);
		if (dev_store(ctx, p, a, n))
			diag("a copy to the acquired address failed");
		tp_tensor_release(ctx, t);
	}
	s0 = stats(ctx);
	ok(!tp_tensor_offload(ctx, t) &&
	   stats(ctx).bytes_d2h - s0.bytes_d2h == n && reads_as(ctx, t, a),
	   "its offload copies all of it, and the new contents come back");

	tp_tensor_free(ctx, t);
	ok(stats(ctx).host_bytes == 0, "freeing it gives its copies back");
	tp_ctx_destroy(ctx);
	free(a);
	free(patch);
}

/* A writeback copies ahead; the tensor stays resident and usable. */
static void writeback(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("pager.budget=16C,pager.swap_cache=0");
	size_t chunk = pt_chunk(ctx), n = 2 * chunk;
	unsigned char *c = malloc(n);
	struct tp_stats s0, s1;
	struct tp_tensor *u;
	void *p;

	if (!c)
		bail_out("out of memory");
	u = filled(ctx, c, n, seed + 3);
	ok(!tp_tensor_offload(ctx, u) && reads_as(ctx, u, c) &&
	   stats(ctx).host_bytes == 0,
	   "pager.swap_cache off: a reload keeps no copy");

	p = tp_tensor_acquire(ctx, u, TP_READ);
	ok(p && tp_pager_writeback(ctx->pager, u) == -EBUSY &&
	   stats(ctx).host_bytes == 0,
	   "a pinned tensor is not written back (-EBUSY), nothing copied");
	tp_tensor_release(ctx, u);

	s0 = stats(ctx);
	ok(tp_pager_writeback(ctx->pager, u) == 0, "an unpinned one is");
	s1 = stats(ctx);
	ok(s1.writebacks == 1 && s1.host_cached_bytes == n &&
	   s1.bytes_d2h - s0.bytes_d2h == n && u->resident_pages == 2,
	   "its pages copied, still resident");
	ok(reads_as(ctx, u, c), "it reads as before");
	s0 = stats(ctx);
	ok(!tp_tensor_offload(ctx, u) && stats(ctx).bytes_d2h == s0.bytes_d2h &&
	   reads_as(ctx, u, c),
	   "its offload copies nothing and it comes back intact");

	/* A write after the writeback: the copy is stale, so it goes. */
	ok(tp_pager_writeback(ctx->pager, u) == 0 && u->cached_pages == 2,
	   "written back again");
	pt_fill(c, n, seed + 4);
	ok(!tp_tensor_write(ctx, u, 0, c, n) && u->cached_pages == 0,
	   "a write drops the copy");
	ok(!tp_tensor_offload(ctx, u) && reads_as(ctx, u, c),
	   "the written contents come back, not the copy's");
	tp_tensor_free(ctx, u);
	tp_ctx_destroy(ctx);
	free(c);
}

struct opener {
	struct tp_ctx *ctx;
	volatile bool opened;
};

/* Hold the copy engine 100 ms, then let it run. */
static void *open_later(void *arg)
{
	struct opener *o = arg;
	struct timespec hold = { 0, 100 * 1000 * 1000 };

	nanosleep(&hold, NULL);
	o->opened = true;
	tp_vmm_host_gate(o->ctx->vmm, TP_STREAM_D2H, false);
	return NULL;
}

/*
 * A writeback leaves its tensor resident while the copy reads its chunks:
 * freeing it then (its chunks unmapped, or kept mapped for another range
 * by the range cache) waits for the copy. Unmapped under it, the copy
 * engine would read a hole and fault.
 */
static void writeback_then_free(uint64_t seed, const char *conf,
				const char *what)
{
	struct tp_ctx *ctx;
	size_t chunk, n;
	unsigned char *c;
	struct opener o;
	struct tp_tensor *u, *v;
	pthread_t th;
	int ret;

	/* Holding a copy in flight takes the host backend's copy gate. */
	if (strcmp(pt_backend(), "host")) {
		skip(2, "%s: needs the host backend's copy gate", what);
		return;
	}
	ctx = pt_ctx("%s", conf);
	chunk = pt_chunk(ctx);
	n = 4 * chunk;
	c = malloc(n);
	o = (struct opener){ .ctx = ctx };
	if (!c)
		bail_out("out of memory");
	u = filled(ctx, c, n, seed + 7);
	tp_sync(ctx);
	if (tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true) ||
	    pthread_create(&th, NULL, open_later, &o))
		bail_out("holding the copy engine");
	ret = tp_pager_writeback(ctx->pager, u);
	tp_tensor_free(ctx, u);
	ok(!ret && o.opened,
	   "%s: a tensor freed while its writeback is held waits for the copy",
	   what);
	pthread_join(th, NULL);
	/* Whatever took its chunks or range is intact. */
	v = filled(ctx, c, n, seed + 8);
	ok(reads_as(ctx, v, c) && !tp_tensor_offload(ctx, v) &&
	   reads_as(ctx, v, c), "%s: the next tensor of its size reads back "
	   "byte for byte", what);
	tp_tensor_free(ctx, v);
	tp_ctx_destroy(ctx);
	free(c);
}

/* Host swap full: an offload takes cached copies' room, a writeback not. */
static void swap_full(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("pager.budget=16C,pager.host_budget=4C,"
				    "pager.swap_cache=1");
	size_t chunk = pt_chunk(ctx);
	unsigned char *a = malloc(2 * chunk), *b = malloc(3 * chunk);
	struct tp_tensor *ta, *tb;
	struct tp_stats s;

	if (!a || !b)
		bail_out("out of memory");
	ta = filled(ctx, a, 2 * chunk, seed + 5);
	ok(!tp_tensor_offload(ctx, ta) && reads_as(ctx, ta, a) &&
	   stats(ctx).host_cached_bytes == 2 * chunk,
	   "2 of 4 host chunks hold a cached copy");
	tb = filled(ctx, b, 3 * chunk, seed + 6);
	ok(!tp_tensor_offload(ctx, tb), "an offload of 3 chunks fits");
	s = stats(ctx);
	ok(s.host_cached_bytes == 0 && s.host_bytes == 3 * chunk,
	   "by dropping the cached copy");
	ok(reads_as(ctx, tb, b) && reads_as(ctx, ta, a),
	   "both tensors read back byte for byte");
	ok(tp_pager_writeback(ctx->pager, ta) == -ENOSPC &&
	   stats(ctx).host_cached_bytes == 3 * chunk && ta->cached_pages == 0,
	   "a writeback finds no free room (-ENOSPC) and pushes no copy out");
	tp_tensor_free(ctx, ta);
	tp_tensor_free(ctx, tb);
	tp_ctx_destroy(ctx);
	free(a);
	free(b);
}

int main(void)
{
	uint64_t seed;

	pt_probe();
	plan_tests(28);
	seed = pt_seed();
	reload_and_write(seed);
	writeback(seed);
	swap_full(seed);
	writeback_then_free(seed, "pager.budget=16C,pager.range_cache=0",
			    "chunks unmapped");
	writeback_then_free(seed, "pager.budget=16C", "range cached");
	return exit_status();
}
