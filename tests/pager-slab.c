/* SPDX-License-Identifier: MIT */
/*
 * Small tensors packed into slab chunks, and the address lookup: any
 * address inside a tensor (a page in the middle of a multi-chunk tensor,
 * a byte inside a slab slot) names it; addresses outside none. The table
 * is keyed by 2 MiB granule, not by chunk: ranges start on one, and
 * chunks past a granule's first still name their own tensor.
 */
#include "tests/pager-util.h"

#define NSMALL 100
#define GRANULE (2u << 20)	/* the driver's granule: vmm's va_align */

/*
 * Two tensors of a granule and 3 chunks each, created back to back: each
 * starts on a granule, every chunk of each names it, and the unmapped
 * rest of its last granule names nothing.
 */
static void granules(void)
{
	size_t chunk = pt_probe();
	size_t n = (GRANULE > chunk ? GRANULE / chunk : 1) + 3;
	struct tp_ctx *ctx = pt_ctx("pager.budget=%zuC", 2 * n);
	struct tp_tensor *t[2];
	uintptr_t va[2];
	bool aligned = true, all = true, tail = true;

	for (int k = 0; k < 2; k++) {
		t[k] = tp_tensor_create(ctx, n * chunk, 0);
		if (!t[k])
			bail_out("create a tensor of %zu chunks", n);
		va[k] = (uintptr_t)tp_tensor_acquire(ctx, t[k], TP_WRITE);
		tp_tensor_release(ctx, t[k]);
		aligned &= va[k] && va[k] % GRANULE == 0;
	}
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < n; i++)
			all &= tp_tensor_lookup(ctx, (void *)(va[k] + i * chunk +
							     chunk / 2)) == t[k];
		for (uintptr_t a = va[k] + n * chunk;
		     a % GRANULE; a += chunk)
			tail &= tp_tensor_lookup(ctx, (void *)a) == NULL;
	}
	ok(aligned, "ranges start on a 2 MiB granule (%#lx, %#lx)",
	   (unsigned long)va[0], (unsigned long)va[1]);
	ok(all, "each of the %zu chunks of two tensors past a granule names "
	   "its own", n);
	ok(tail, "the rest of their last granule names nothing");
	for (int k = 0; k < 2; k++)
		tp_tensor_free(ctx, t[k]);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_tensor *small[NSMALL], *t, *big;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t chunk, bytes;
	unsigned char buf[100], want[100];
	struct tp_stats st;
	uint64_t offloads;
	struct tp_ctx *ctx;
	bool found = true, data = true, overlap = false;
	int eperm = 0;

	pt_probe();
	plan_tests(21);
	ctx = pt_ctx("pager.budget=16C,pager.high_watermark=100");
	chunk = pt_chunk(ctx);

	for (int i = 0; i < NSMALL; i++) {
		uintptr_t a;

		small[i] = tp_tensor_create(ctx, 100, 0);
		if (!small[i])
			bail_out("create small %d", i);
		a = (uintptr_t)tp_tensor_acquire(ctx, small[i], TP_WRITE);
		tp_tensor_release(ctx, small[i]);
		lo = a < lo ? a : lo;
		hi = a + 100 > hi ? a + 100 : hi;
		pt_fill(want, 100, i);
		data &= !tp_tensor_write(ctx, small[i], 0, want, 100);
	}
	tp_stats_get(ctx, &st);
	ok(st.chunks_mapped == 1, "100 tensors of 100 bytes share one chunk (%" PRIu64 ")",
	   st.chunks_mapped);
	ok(hi - lo <= chunk && lo / chunk == (hi - 1) / chunk,
	   "their addresses lie inside one slab chunk");
	for (int i = 0; i < NSMALL; i++) {
		uintptr_t a = (uintptr_t)tp_tensor_acquire(ctx, small[i], TP_READ);

		for (int j = 0; j < i; j++) {
			uintptr_t b = (uintptr_t)tp_tensor_acquire(ctx, small[j], TP_READ);

			overlap |= a < b + 100 && b < a + 100;
			tp_tensor_release(ctx, small[j]);
		}
		found &= tp_tensor_lookup(ctx, (void *)(a + 57)) == small[i];
		tp_tensor_release(ctx, small[i]);
		pt_fill(want, 100, i);
		data &= !tp_tensor_read(ctx, small[i], 0, buf, 100) &&
			!memcmp(buf, want, 100);
		eperm += tp_tensor_offload(ctx, small[i]) == -EPERM;
	}
	ok(!overlap, "no two slots overlap");
	ok(data, "each reads back its own bytes");
	ok(found, "lookup of a byte inside each slot names it");
	ok(eperm == NSMALL, "a slab tensor is not paged: offload -EPERM");
	ok(tp_tensor_evict(ctx, small[0]) == -EPERM, "nor evicted");

	/* A multi-chunk tensor: every interior address resolves. */
	bytes = 5 * chunk + 100;
	t = tp_tensor_create(ctx, bytes, 0);
	{
		uintptr_t va = (uintptr_t)tp_tensor_acquire(ctx, t, TP_WRITE);
		size_t offs[] = { 0, 1, chunk - 1, chunk, 3 * chunk + 5, bytes - 1 };
		bool all = true;

		tp_tensor_release(ctx, t);
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
			all &= tp_tensor_lookup(ctx, (void *)(va + offs[k])) == t;
		ok(all, "start, page edges, middle and last byte name the tensor");
		ok(tp_tensor_lookup(ctx, (void *)(va + bytes)) == NULL,
		   "one past the last byte names nothing");
		ok(tp_tensor_lookup(ctx, (void *)(va - 1)) != t, "nor one before");
		ok_rc(tp_tensor_offload(ctx, t), "offload it");
		ok(tp_tensor_lookup(ctx, (void *)(va + 4 * chunk)) == t,
		   "an offloaded tensor is still found");
		ok_rc(tp_tensor_free(ctx, t), "free");
		ok(tp_tensor_lookup(ctx, (void *)(va + 4 * chunk)) == NULL,
		   "a freed tensor is not");
	}

	granules();

	/* Freed slots leave an idle slab, given back under pressure. */
	for (int i = 0; i < NSMALL; i++)
		tp_tensor_free(ctx, small[i]);
	ok(tp_tensor_lookup(ctx, (void *)(lo + 57)) == NULL, "freed slots name nothing");
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	ok(st.chunks_mapped == 1, "the idle slab is kept");
	offloads = st.offloads;
	big = tp_tensor_create(ctx, st.budget_bytes, 0);
	ok(big && tp_tensor_acquire(ctx, big, TP_WRITE),
	   "a tensor of the whole budget takes the slab's chunk");
	tp_stats_get(ctx, &st);
	ok(st.offloads == offloads && st.chunks_mapped == st.budget_bytes / chunk,
	   "without offloading anything (offloads %" PRIu64 ", mapped %" PRIu64 ")",
	   st.offloads, st.chunks_mapped);
	tp_tensor_release(ctx, big);
	tp_tensor_free(ctx, big);
	tp_ctx_destroy(ctx);
	return exit_status();
}
