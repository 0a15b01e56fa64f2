/* SPDX-License-Identifier: MIT */
/*
 * Offloading part of a tensor (tp_pager_offload_range()), as an op run in
 * parts sends the rows it is done with to host swap while it pins
 * others: only whole handles inside the range, resident and unpinned,
 * leave; the rest stays as it is; the bytes come back as written. Bad
 * ranges are refused with nothing moved. tp_pager_rows_done() offloads
 * what was written, and rows read of a tensor lineage cannot regenerate.
 *
 * host (bytes), on the chunked pool (a handle per page) and with extents
 * (a handle leaves whole or not at all). The resident rest of a tensor
 * whose range is on its way to host swap (the copies held by the host
 * backend's gate) is no victim while they are in flight, yet a demand
 * that needs it is not refused: it waits for them to land, and the rest
 * leaves.
 */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"
#include "vmm/backend_host.h"

#define PAGES	8

static size_t count(const struct tp_tensor *t, enum tp_page_state a,
		    enum tp_page_state b)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_pages; i++)
		n += t->pages[i].state == a || t->pages[i].state == b;
	return n;
}

static size_t swapped(const struct tp_tensor *t)
{
	return count(t, TP_PAGE_OFFLOADING, TP_PAGE_OFFLOADED);
}

/* @t, written with @seed's pattern into @want, released. */
static struct tp_tensor *written(struct tp_ctx *ctx, size_t bytes,
				 unsigned flags, uint64_t seed,
				 unsigned char *want)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, flags);
	void *p = t ? tp_tensor_acquire(ctx, t, TP_WRITE) : NULL;

	if (!p)
		bail_out("tensor of %zu bytes: %s", bytes, strerror(errno));
	pt_fill(want, bytes, seed);
	memcpy(p, want, bytes);
	if (tp_tensor_release(ctx, t))
		bail_out("release");
	return t;
}

/* Whether @t reads back as @want. */
static bool reads_back(struct tp_ctx *ctx, struct tp_tensor *t,
		       const unsigned char *want)
{
	const void *p = tp_tensor_acquire(ctx, t, TP_READ);
	bool same = p && !memcmp(p, want, t->bytes);

	if (p)
		tp_tensor_release(ctx, t);
	return same;
}

static void chunked(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("vmm.mapping=chunks,pager.budget=32C");
	struct tp_pager *pg = ctx->pager;
	size_t c = pt_chunk(ctx), bytes = PAGES * c;
	unsigned char *want = malloc(bytes);
	struct tp_tensor *t, *u;
	bool rest_pinned;

	t = written(ctx, bytes, TP_UNCOMPUTABLE, seed, want);
	/* The last two pages pinned, as an op in parts holds its part. */
	if (!tp_tensor_acquire_range(ctx, t, 6 * c, 2 * c, TP_READ))
		bail_out("acquire_range");
	ok_rc(tp_pager_offload_range(pg, t, 0, bytes), "offload the range, two pages pinned");
	tp_pager_sync(pg);
	rest_pinned = t->pages[6].state == TP_PAGE_RESIDENT &&
		      t->pages[7].state == TP_PAGE_RESIDENT;
	ok(swapped(t) == 6 && t->resident_pages == 2 && rest_pinned,
	   "six pages left for host swap, the two pinned stayed (%zu, %zu)",
	   swapped(t), t->resident_pages);
	ok(!tp_tensor_release_range(ctx, t, 6 * c, 2 * c), "release");
	ok(reads_back(ctx, t, want), "the bytes come back as written");

	/* Half a page at either end: only the pages wholly inside leave. */
	ok_rc(tp_pager_offload_range(pg, t, c / 2, 2 * c), "offload [C/2, 5C/2)");
	ok(swapped(t) == 1 && t->pages[1].state != TP_PAGE_RESIDENT &&
	   t->pages[0].state == TP_PAGE_RESIDENT &&
	   t->pages[2].state == TP_PAGE_RESIDENT,
	   "only page 1, wholly inside, left (%zu)", swapped(t));
	ok(reads_back(ctx, t, want), "and comes back as written");

	/* Bad ranges: refused, nothing moved. */
	ok(tp_pager_offload_range(pg, t, 0, 0) == -EINVAL &&
	   tp_pager_offload_range(pg, t, c, bytes) == -EINVAL &&
	   tp_pager_offload_range(pg, t, bytes + 1, 1) == -EINVAL &&
	   t->resident_pages == PAGES && !swapped(t),
	   "an empty range or one past the end: -EINVAL, nothing left");

	/* A tensor that never goes to host swap. */
	u = written(ctx, 2 * c, TP_OFFLOAD_PINNED, seed + 1, want);
	ok(tp_pager_offload_range(pg, u, 0, 2 * c) == -EPERM &&
	   u->resident_pages == 2, "TP_OFFLOAD_PINNED: -EPERM, still resident");
	tp_tensor_free(ctx, u);

	/* Rows done: written rows and read rows of what lineage cannot
	 * make again both go to host swap, not away. */
	pt_fill(want, bytes, seed);
	ok_rc(tp_pager_rows_done(pg, t, 0, 3 * c, true), "rows written done");
	ok_rc(tp_pager_rows_done(pg, t, 3 * c, 3 * c, false), "rows read done");
	tp_pager_sync(pg);
	ok(swapped(t) == 6 && !t->evicted_pages,
	   "six pages in host swap, none evicted (%zu, %zu)", swapped(t),
	   t->evicted_pages);
	ok(reads_back(ctx, t, want), "the bytes come back as written");
	tp_tensor_free(ctx, t);
	free(want);
	tp_ctx_destroy(ctx);
}

/*
 * Extents: the tensor backed by handles of up to four pages; a pinned
 * page keeps its whole handle, and a range that cuts a handle takes
 * none of it.
 */
static void extents(uint64_t seed)
{
	/* (a handle is at most 1/32 of the budget) */
	struct tp_ctx *ctx = pt_ctx("vmm.mapping=extents,vmm.extent_max=4C,"
				    "pager.budget=128C");
	struct tp_pager *pg = ctx->pager;
	size_t c = pt_chunk(ctx), bytes = PAGES * c, h0, h1;
	unsigned char *want = malloc(bytes);
	struct tp_tensor *t = written(ctx, bytes, TP_UNCOMPUTABLE, seed, want);

	h0 = tp_pager_handle_end(pg, t, 0);
	h1 = h0 < PAGES ? tp_pager_handle_end(pg, t, h0) : PAGES;
	diag("handles end at pages %zu and %zu", h0, h1);
	if (!tp_tensor_acquire_range(ctx, t, 0, c, TP_READ))
		bail_out("acquire_range");
	ok_rc(tp_pager_offload_range(pg, t, 0, bytes), "offload all, page 0 pinned");
	ok(swapped(t) == PAGES - h0 && t->resident_pages == h0,
	   "the handle with the pinned page stayed whole (%zu left)",
	   swapped(t));
	ok(!tp_tensor_release_range(ctx, t, 0, c) && reads_back(ctx, t, want),
	   "the bytes come back as written");
	ok_rc(tp_pager_offload_range(pg, t, 0, (h0 - 1) * c + 1),
	      "a range that cuts the first handle");
	ok(h0 > 1 && !swapped(t), "takes none of it (%zu)", swapped(t));
	ok_rc(tp_pager_offload_range(pg, t, 0, h0 * c), "the first handle's range");
	ok(swapped(t) == h0, "takes it whole (%zu)", swapped(t));
	ok(reads_back(ctx, t, want), "the bytes come back as written");
	tp_tensor_free(ctx, t);
	free(want);
	tp_ctx_destroy(ctx);
}

/* Opens @vmm's copy gate to host after 50 ms. */
static void *open_gate(void *vmm)
{
	usleep(50000);
	tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	return NULL;
}

static void inflight_rest(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("vmm.mapping=chunks,pager.budget=16C,"
				    "pager.range_cache=0");
	size_t c = pt_chunk(ctx);
	unsigned char *want = malloc(12 * c);
	struct tp_tensor *a, *b;
	pthread_t th;

	a = written(ctx, 12 * c, TP_UNCOMPUTABLE, seed, want);
	b = tp_tensor_create(ctx, 10 * c, TP_UNCOMPUTABLE);
	if (!b)
		bail_out("b");
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	ok_rc(tp_pager_offload_range(ctx->pager, a, 0, 4 * c),
	      "a's first four of twelve pages on their way to host swap, held by the gate");
	ok(a->inflight_pages == 4 && a->resident_pages == 8 && !a->candidate,
	   "the other eight resident, no victim while the copies fly");
	if (pthread_create(&th, NULL, open_gate, ctx->vmm))
		bail_out("thread");
	ok(tp_tensor_acquire(ctx, b, TP_WRITE) != NULL,
	   "ten pages for b in a pool of sixteen: granted once the copies land (%s)",
	   tp_last_error(ctx));
	pthread_join(th, NULL);
	ok(a->resident_pages == 0 && swapped(a) == 12,
	   "a's rest left for host swap to make the room (%zu resident)",
	   a->resident_pages);
	ok(!tp_tensor_release(ctx, b) && reads_back(ctx, a, want),
	   "a comes back as written");
	free(want);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	uint64_t seed;

	pt_probe();
	if (strcmp(pt_backend(), "host"))
		plan_skip_all("checks bytes through host addresses");
	seed = pt_seed();
	plan_tests(26);
	chunked(seed);
	extents(seed + 7);
	inflight_rest(seed + 13);
	return exit_status();
}
