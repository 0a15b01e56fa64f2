/* SPDX-License-Identifier: MIT */
/*
 * The page-state machine: the table of legal transitions, and one tensor
 * walked through every state with the pages checked at each step;
 * eviction and regeneration through test regeneration callbacks; fake
 * deletion; identity exchange for in-place ops.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"

static struct tp_pager *pg;
static unsigned regens;

/* "Regenerate" by rewriting the pattern the tensor's id seeds. */
static bool test_can(void *priv, const struct tp_tensor *t)
{
	return t->computable;
}

static bool regen_fails;

static int test_regen(void *priv, struct tp_tensor *t)
{
	unsigned char *buf = malloc(t->bytes);
	void *addr;
	int ret;

	ret = tp_pager_acquire(pg, t, 0, t->bytes, TP_WRITE | TP_ACQ_NO_REGEN,
			       &addr);
	if (ret)
		goto out;
	/* A failing replay writes garbage, then reports the failure. */
	pt_fill(buf, t->bytes, regen_fails ? 12345 : t->id);
	ret = tp_vmm_copy_h2d(pg->vmm, (uintptr_t)addr, buf, t->bytes,
			      TP_STREAM_COMPUTE);
	if (!ret)
		ret = tp_vmm_stream_sync(pg->vmm, TP_STREAM_COMPUTE);
	tp_pager_release(pg, t, 0, t->bytes);
	regens++;
	if (regen_fails)
		ret = -EIO;
out:
	free(buf);
	return ret;
}

static bool keep_record;
static bool test_on_free(void *priv, struct tp_tensor *t)
{
	return keep_record;
}

static const struct tp_regen_ops ops = {
	.can_regenerate = test_can,
	.regenerate = test_regen,
	.on_free = test_on_free,
};

static bool all_pages(struct tp_tensor *t, enum tp_page_state s)
{
	for (size_t i = 0; i < t->nr_pages; i++)
		if (t->pages[i].state != s)
			return false;
	return true;
}

static bool holds_pattern(struct tp_ctx *ctx, struct tp_tensor *t, uint64_t seed)
{
	unsigned char *a = malloc(t->bytes), *b = malloc(t->bytes);
	bool same;

	pt_fill(a, t->bytes, seed);
	same = !tp_tensor_read(ctx, t, 0, b, t->bytes) && !memcmp(a, b, t->bytes);
	free(a);
	free(b);
	return same;
}

static void test_table(void)
{
	static const int legal[][2] = {
		{ TP_PAGE_UNBACKED, TP_PAGE_RESIDENT },
		{ TP_PAGE_RESIDENT, TP_PAGE_OFFLOADING },
		{ TP_PAGE_OFFLOADING, TP_PAGE_RESIDENT },
		{ TP_PAGE_OFFLOADING, TP_PAGE_OFFLOADED },
		{ TP_PAGE_OFFLOADED, TP_PAGE_RELOADING },
		{ TP_PAGE_RELOADING, TP_PAGE_RESIDENT },
		{ TP_PAGE_RESIDENT, TP_PAGE_EVICTED },
		{ TP_PAGE_EVICTED, TP_PAGE_RESIDENT },
		{ TP_PAGE_OFFLOADED, TP_PAGE_EVICTED },
		{ TP_PAGE_UNBACKED, TP_PAGE_EVICTED },
		/* a rescue: the memory left was still mapped, untaken */
		{ TP_PAGE_OFFLOADED, TP_PAGE_RESIDENT },
		/* an offload in flight dropped (freed, fake-deleted) */
		{ TP_PAGE_OFFLOADING, TP_PAGE_EVICTED },
	};
	unsigned n = 0, wrong = 0;

	for (int a = 0; a < TP_NR_PAGE_STATES; a++) {
		for (int b = 0; b < TP_NR_PAGE_STATES; b++) {
			bool want = false;

			for (size_t k = 0; k < sizeof(legal) / sizeof(legal[0]); k++)
				want |= legal[k][0] == a && legal[k][1] == b;
			n += tp_page_legal(a, b);
			wrong += tp_page_legal(a, b) != want;
		}
	}
	ok(n == 12 && wrong == 0, "exactly the 12 legal transitions (%u, %u wrong)",
	   n, wrong);
}

int main(void)
{
	struct tp_tensor *t, *u;
	struct tp_ctx *ctx;
	unsigned char *buf;
	size_t chunk, bytes;
	uintptr_t va_t, va_u;
	uint64_t used;
	void *addr;

	pt_probe();
	plan_tests(33);
	test_table();
	ctx = pt_ctx("pager.budget=16C,pager.high_watermark=100");
	pg = ctx->pager;
	tp_pager_set_regen_ops(pg, &ops);
	chunk = pt_chunk(ctx);
	bytes = 2 * chunk + 3;

	t = tp_tensor_create(ctx, bytes, 0);
	t->computable = true;
	ok(t->nr_pages == 3 && all_pages(t, TP_PAGE_UNBACKED) && !t->resident_pages,
	   "new: 3 pages UNBACKED");
	buf = malloc(bytes);
	pt_fill(buf, bytes, t->id);
	ok_rc(tp_tensor_write(ctx, t, 0, buf, bytes), "write");
	ok(all_pages(t, TP_PAGE_RESIDENT) && tp_pager_is_resident(t), "RESIDENT");
	ok_rc(tp_tensor_offload(ctx, t), "offload");
	ok(all_pages(t, TP_PAGE_OFFLOADING) || all_pages(t, TP_PAGE_OFFLOADED),
	   "OFFLOADING (or already landed)");
	tp_sync(ctx);
	ok(all_pages(t, TP_PAGE_OFFLOADED) && !t->resident_pages, "OFFLOADED after sync");
	ok_rc(tp_tensor_prefetch(ctx, t), "prefetch");
	ok(all_pages(t, TP_PAGE_RELOADING), "RELOADING until observed");
	ok(tp_tensor_acquire(ctx, t, TP_READ) != NULL && all_pages(t, TP_PAGE_RESIDENT),
	   "acquire: RESIDENT");
	tp_tensor_release(ctx, t);

	/* Range: only the middle page leaves and comes back. */
	ok_rc(tp_tensor_offload(ctx, t), "offload again");
	tp_sync(ctx);
	ok(tp_tensor_acquire_range(ctx, t, chunk + 1, 10, TP_READ) != NULL &&
	   t->pages[0].state == TP_PAGE_OFFLOADED &&
	   t->pages[1].state == TP_PAGE_RESIDENT &&
	   t->pages[2].state == TP_PAGE_OFFLOADED, "range acquire: page 1 only");
	tp_tensor_release_range(ctx, t, chunk + 1, 10);

	ok_rc(tp_tensor_evict(ctx, t), "evict a computable tensor");
	ok(t->pages[1].state == TP_PAGE_EVICTED && tp_pager_has_evicted(t) &&
	   t->pages[0].state == TP_PAGE_OFFLOADED,
	   "the resident page is EVICTED, offloaded ones stay");
	ok(tp_pager_acquire(pg, t, 0, bytes, TP_READ | TP_ACQ_NO_REGEN, &addr) == -ESTALE &&
	   t->pages[1].state == TP_PAGE_EVICTED && !t->pins,
	   "TP_ACQ_NO_REGEN: -ESTALE, nothing changed");
	ok(holds_pattern(ctx, t, t->id) && regens == 1,
	   "read regenerates once (%u) and reloads: contents back", regens);
	ok(all_pages(t, TP_PAGE_RESIDENT), "RESIDENT again");

	/* A replay that fails after writing leaves nothing half-made. */
	ok_rc(tp_tensor_evict(ctx, t), "evict before a failing replay");
	regen_fails = true;
	ok(tp_tensor_read(ctx, t, 0, buf, bytes) == -EIO &&
	   all_pages(t, TP_PAGE_EVICTED) && !t->pins,
	   "failed replay: -EIO, pages EVICTED again, not pinned");
	regen_fails = false;
	ok(holds_pattern(ctx, t, t->id) && regens == 3, "the next replay restores it");

	ok_rc(tp_tensor_offload(ctx, t), "offload for a drop");
	ok_rc(tp_pager_drop_contents(pg, t), "drop contents");
	ok(all_pages(t, TP_PAGE_EVICTED), "OFFLOADED -> EVICTED");
	ok(holds_pattern(ctx, t, t->id) && regens == 4, "regenerated again");

	/* Never written: EVICTED without backing a chunk (in-place's old
	 * version at its fresh range). */
	u = tp_tensor_create(ctx, bytes, 0);
	u->computable = true;
	used = tp_pager_used_bytes(pg);
	ok_rc(tp_pager_drop_contents(pg, u), "drop a never-written tensor");
	ok(all_pages(u, TP_PAGE_EVICTED) && u->evicted_pages == 3 &&
	   !u->resident_pages && tp_pager_used_bytes(pg) == used,
	   "UNBACKED -> EVICTED, no chunk used (%llu -> %llu bytes)",
	   (unsigned long long)used,
	   (unsigned long long)tp_pager_used_bytes(pg));
	ok(holds_pattern(ctx, u, u->id) && regens == 5,
	   "read regenerates it (%u)", regens);
	tp_tensor_free(ctx, u);

	/* Fake deletion: lineage keeps the struct, the memory goes. */
	keep_record = true;
	tp_pager_tensor_get(t);
	va_t = t->va;
	ok_rc(tp_tensor_free(ctx, t), "free while lineage needs it");
	ok(all_pages(t, TP_PAGE_EVICTED) && tp_tensor_lookup(ctx, (void *)va_t) == NULL,
	   "memory gone, not found by address");
	ok(!tp_pager_acquire(pg, t, 0, bytes, TP_READ, &addr) && regens == 6,
	   "lineage can still regenerate it");
	tp_pager_release(pg, t, 0, bytes);
	tp_pager_tensor_put(pg, t);
	keep_record = false;

	/* Identity exchange: pages and address move together. */
	t = tp_tensor_create(ctx, bytes, 0);
	u = tp_tensor_create(ctx, bytes, 0);
	pt_fill(buf, bytes, 1000);
	tp_tensor_write(ctx, t, 0, buf, bytes);
	pt_fill(buf, bytes, 2000);
	tp_tensor_write(ctx, u, 0, buf, bytes);
	va_t = t->va;
	va_u = u->va;
	ok_rc(tp_pager_swap_identity(pg, t, u), "swap identities");
	ok(t->va == va_u && u->va == va_t && holds_pattern(ctx, t, 2000) &&
	   holds_pattern(ctx, u, 1000), "addresses and contents exchanged");
	ok(tp_tensor_lookup(ctx, (void *)(va_u + chunk)) == t &&
	   tp_tensor_lookup(ctx, (void *)(va_t + chunk)) == u, "lookup follows");
	tp_tensor_free(ctx, t);
	tp_tensor_free(ctx, u);
	free(buf);
	tp_ctx_destroy(ctx);
	return exit_status();
}
