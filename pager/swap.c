/* SPDX-License-Identifier: MIT */
/*
 * Host swap: chunk-sized buffers (pinned on cuda) obtained from the
 * backend once and recycled, within pager.host_budget. A buffer that a
 * copy in flight still reads waits on that copy's event before reuse; a
 * take that such buffers would cover waits for them rather than obtain
 * more, where host memory costs more than the copies (pinned on cuda).
 *
 * Buffers a take lacks are obtained as one block, and a take hands its
 * buffers out in address order: a tensor's pages then often land in
 * adjacent buffers of one block, which the offload and reload copy as one
 * run (tp_swap_follows(): never across two blocks, even where they touch).
 *
 * Each time swap grows, pieces of pager.swap_ahead go into preparation
 * ahead of need (prepare_ahead()): host memory takes most of its time to
 * fault in (8.9 GB/s a thread on an H100 machine, against 50 for the copy
 * that fills it), which the backend does on a thread of its own, a piece
 * after another; a take that lacks buffers then finds them ready, or
 * waits for the oldest.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/array.h"
#include "pager/pager_int.h"

int tp_swap_init(struct tp_pager *pg, uint64_t budget_bytes,
		 uint64_t ahead_bytes)
{
	struct tp_swap *sw = &pg->swap;

	sw->max = budget_bytes ? budget_bytes / pg->chunk : SIZE_MAX;
	sw->ahead_min = (ahead_bytes + pg->chunk - 1) / pg->chunk;
	return 0;
}

void tp_swap_fini(struct tp_pager *pg)
{
	struct tp_swap *sw = &pg->swap;

	tp_swap_reap(pg, true);
	for (size_t i = 0; i < sw->nr_prep; i++) {
		size_t len;
		void *p = tp_vmm_host_prepared(pg->vmm, sw->prep[i].token,
					       true, &len);

		if (p)
			tp_vmm_host_free(pg->vmm, p, len);
	}
	sw->nr_prep = 0;
	sw->prep_n = 0;
	/* Every buffer is back by now (all tensors are gone). */
	for (size_t i = 0; i < sw->nr_blocks; i++)
		tp_vmm_host_free(pg->vmm, sw->blocks[i].base,
				 sw->blocks[i].n * pg->chunk);
	free(sw->blocks);
	sw->blocks = NULL;
	sw->nr_blocks = 0;
	free(sw->free);
	free(sw->defer);
	sw->free = NULL;
	sw->defer = NULL;
	sw->nr_free = 0;
}

/* The first block whose base is at or above @p (blocks sorted by base). */
static size_t block_at_or_above(const struct tp_swap *sw, const void *p)
{
	size_t lo = 0, hi = sw->nr_blocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)sw->blocks[mid].base < (uintptr_t)p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool tp_swap_follows(const struct tp_pager *pg, const void *a, const void *b)
{
	const struct tp_swap *sw = &pg->swap;
	size_t i;

	if ((const char *)b != (const char *)a + pg->chunk)
		return false;
	/* @b begins a block: @a ends another, which only touches it. */
	i = block_at_or_above(sw, b);
	return i == sw->nr_blocks || sw->blocks[i].base != b;
}

static void push_free(struct tp_pager *pg, void *buf)
{
	/* The stack never outgrows the buffers allocated: sized on take. */
	pg->swap.free[pg->swap.nr_free++] = buf;
	pg->swap.used--;
}

void tp_swap_put(struct tp_pager *pg, void *const *bufs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		push_free(pg, bufs[i]);
}

void tp_swap_put_after(struct tp_pager *pg, void *buf, struct tp_event *ev)
{
	struct tp_swap *sw = &pg->swap;

	if (sw->nr_defer == sw->cap_defer) {
		struct tp_swap_defer *d;

		d = tp_array_grow(sw->defer, &sw->cap_defer,
				  sw->cap_defer + 1, sizeof(*d), 64);
		if (!d) {
			/* Cannot defer: wait for the copy instead. */
			tp_vmm_wait_why("a swap buffer's copy");
			tp_vmm_event_sync(pg->vmm, ev);
			push_free(pg, buf);
			return;
		}
		sw->defer = d;
	}
	sw->defer[sw->nr_defer].buf = buf;
	sw->defer[sw->nr_defer].ev = tp_vmm_event_get(ev);
	sw->nr_defer++;
}

void tp_swap_reap(struct tp_pager *pg, bool wait)
{
	struct tp_swap *sw = &pg->swap;
	struct tp_event *asked = NULL;
	size_t j = 0;
	int ret = 0;

	/* The buffers of one copy are deferred together, on one event. */
	for (size_t i = 0; i < sw->nr_defer; i++) {
		struct tp_swap_defer *d = &sw->defer[i];

		if (d->ev != asked) {
			asked = d->ev;
			if (wait) {
				tp_vmm_wait_why("swap buffers' copies");
				ret = tp_vmm_event_sync(pg->vmm, d->ev);
			} else {
				ret = tp_vmm_event_query(pg->vmm, d->ev);
			}
		}
		if (ret == 0 || (wait && ret != -EAGAIN)) {
			tp_vmm_event_put(pg->vmm, d->ev);
			push_free(pg, d->buf);
		} else {
			sw->defer[j++] = *d;
		}
	}
	sw->nr_defer = j;
}

size_t tp_swap_room_free(struct tp_pager *pg)
{
	struct tp_swap *sw = &pg->swap;

	if (sw->max == SIZE_MAX)
		return SIZE_MAX;
	tp_swap_reap(pg, false);
	/* Deferred buffers come back once their copies land. */
	return sw->max - sw->used + sw->nr_defer;
}

size_t tp_swap_room(struct tp_pager *pg)
{
	size_t room = tp_swap_room_free(pg);

	/* Cached copies are dropped for room (tp_pager_cache_shrink). */
	return room == SIZE_MAX ? room : room + pg->swap.cached;
}

size_t tp_pager_swap_room_pages(struct tp_pager *pg)
{
	return tp_swap_room(pg);
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a;
	uintptr_t y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sort @n buffers by address. Those freed together are popped off the
 * free stack in reverse, often already in order one way or the other: a
 * scan then does (qsort was a tenth of a thrashing replay's time).
 */
static void sort_bufs(void **b, size_t n)
{
	size_t up = 0, down = 0;

	for (size_t i = 1; i < n; i++) {
		up += (uintptr_t)b[i - 1] < (uintptr_t)b[i];
		down += (uintptr_t)b[i - 1] > (uintptr_t)b[i];
	}
	if (n < 2 || !down)
		return;
	if (!up) {
		for (size_t i = 0, j = n - 1; i < j; i++, j--) {
			void *t = b[i];

			b[i] = b[j];
			b[j] = t;
		}
		return;
	}
	qsort(b, n, sizeof(*b), cmp_ptr);
}

/* Room in the block list for one more block. */
static bool block_room(struct tp_swap *sw)
{
	struct tp_swap_block *b;

	if (sw->nr_blocks < sw->cap_blocks)
		return true;
	b = tp_array_grow(sw->blocks, &sw->cap_blocks, sw->nr_blocks + 1,
			  sizeof(*b), 16);
	if (!b)
		return false;
	sw->blocks = b;
	return true;
}

/* A block of @n buffers from the backend, in address order. */
static void add_block(struct tp_swap *sw, char *base, size_t n)
{
	size_t at = block_at_or_above(sw, base);

	memmove(&sw->blocks[at + 1], &sw->blocks[at],
		(sw->nr_blocks - at) * sizeof(sw->blocks[0]));
	sw->blocks[at] = (struct tp_swap_block){ .base = base, .n = n };
	sw->nr_blocks++;
	sw->allocated += n;
}

/*
 * The oldest piece prepared ahead, waited for with @wait: its buffers
 * join the free stack (which has room for them: sized on take). Return
 * false where it is not ready and !@wait. Failed, it is forgotten: the
 * take obtains what it lacks at once.
 */
static bool take_piece(struct tp_pager *pg, bool wait)
{
	struct tp_swap *sw = &pg->swap;
	struct tp_swap_piece pc = sw->prep[0];
	size_t len;
	char *base;

	base = tp_vmm_host_prepared(pg->vmm, pc.token, wait, &len);
	if (!base && !wait && errno == EAGAIN)
		return false;
	memmove(&sw->prep[0], &sw->prep[1], --sw->nr_prep * sizeof(pc));
	sw->prep_n -= pc.n;
	if (!base)
		return true;
	if (!block_room(sw)) {
		tp_vmm_host_free(pg->vmm, base, len);
		return true;
	}
	add_block(sw, base, pc.n);
	/* Popped in address order. */
	for (size_t i = pc.n; i--;)
		sw->free[sw->nr_free++] = base + i * pg->chunk;
	return true;
}

/*
 * A take lacks buffers: the pieces ready join the free stack, then, while
 * it still lacks half a piece or more, the oldest in preparation is waited
 * for (prepared one after another, it is the nearest done; less than
 * that is obtained at once rather than wait for a whole piece).
 */
static void take_pieces(struct tp_pager *pg, size_t n)
{
	struct tp_swap *sw = &pg->swap;

	while (sw->nr_free < n && sw->nr_prep && take_piece(pg, false))
		;
	while (sw->nr_free < n && sw->nr_prep &&
	       2 * (n - sw->nr_free) >= sw->prep[0].n)
		take_piece(pg, true);
}

/*
 * Swap grew: keep a quarter of the swap so far in preparation, in pieces
 * of pager.swap_ahead, two at least and TP_SWAP_PIECES at most, within
 * pager.host_budget. Where the backend cannot, swap grows as needed.
 *
 * The bound keeps what a run holds beyond its peak to 1 GiB by default
 * (a piece is pinned whole when first taken), where a quarter was 12 GB
 * of ResNet-50's 42 GB at batch 664 in 4 GiB. Pieces rather than one
 * block: a take that lacks buffers takes those ready and waits for the
 * next, not for the whole of what is prepared, and the preparing thread
 * starts on the next piece while earlier ones are in use, keeping ahead
 * of bursts of offloads (a cold pass of DTR's Transformer log at 20%
 * takes 160 MB in one offload).
 */
static void prepare_ahead(struct tp_pager *pg)
{
	struct tp_swap *sw = &pg->swap;
	size_t lead = sw->allocated / 4;

	if (!sw->ahead_min)
		return;
	if (lead < 2 * sw->ahead_min)
		lead = 2 * sw->ahead_min;
	if (lead > TP_SWAP_PIECES * sw->ahead_min)
		lead = TP_SWAP_PIECES * sw->ahead_min;
	while (sw->prep_n < lead && sw->nr_prep < TP_SWAP_PIECES) {
		size_t n = sw->ahead_min;
		void *token;

		if (sw->max != SIZE_MAX) {
			if (sw->allocated + sw->prep_n >= sw->max)
				return;
			if (n > sw->max - sw->allocated - sw->prep_n)
				n = sw->max - sw->allocated - sw->prep_n;
		}
		token = tp_vmm_host_prepare(pg->vmm, n * pg->chunk);
		if (!token)
			return;
		sw->prep[sw->nr_prep++] = (struct tp_swap_piece){ token, n };
		sw->prep_n += n;
	}
}

/*
 * Wait for the copies that still read deferred buffers, oldest first,
 * until @n buffers are free (or a wait fails).
 */
static void reap_until(struct tp_pager *pg, size_t n)
{
	struct tp_swap *sw = &pg->swap;

	while (sw->nr_free < n && sw->nr_defer) {
		size_t before = sw->nr_defer;

		tp_vmm_wait_why("swap buffers a copy frees");
		if (tp_vmm_event_sync(pg->vmm, sw->defer[0].ev))
			return;
		tp_swap_reap(pg, false);
		if (sw->nr_defer == before)
			return;		/* not seen complete: do not spin */
	}
}

/*
 * Whether waiting for copies out pays rather than obtaining host memory:
 * what host memory obtained at once cost a byte so far (pinned on cuda:
 * a fraction of the copy engines' speed) against what a byte of those
 * copies took.
 */
static bool waiting_pays(const struct tp_pager *pg)
{
	const struct tp_swap *sw = &pg->swap;

	if (!sw->grown_bytes || !pg->c.bytes_d2h)
		return false;
	return (double)sw->grown_ns / (double)sw->grown_bytes >
	       (double)pg->c.copy_d2h_ns / (double)pg->c.bytes_d2h;
}

int tp_swap_take(struct tp_pager *pg, void **out, size_t n)
{
	struct tp_swap *sw = &pg->swap;
	size_t got = 0;
	bool grew;

	tp_swap_reap(pg, false);
	if (sw->max != SIZE_MAX && sw->used + n > sw->max) {
		if (sw->used - sw->nr_defer + n > sw->max)
			return -ENOSPC;
		tp_swap_reap(pg, true);
	}
	/*
	 * Buffers that copies in flight will free cover the take: wait for
	 * those copies where that costs less than new host memory (which
	 * would then stay allocated).
	 */
	if (sw->nr_free < n && sw->nr_free + sw->nr_defer >= n &&
	    waiting_pays(pg))
		reap_until(pg, n);
	/* Room in the free stack for every buffer that may come back. */
	if (sw->cap_free < sw->allocated + sw->prep_n + n) {
		size_t want = sw->allocated + sw->prep_n + n;
		void **p = tp_array_grow(sw->free, &sw->cap_free, want,
					 sizeof(*p), 2 * want);

		if (!p)
			return -ENOMEM;
		sw->free = p;
	}
	grew = sw->nr_free < n;
	if (grew)
		take_pieces(pg, n);
	while (got < n && sw->nr_free)
		out[got++] = sw->free[--sw->nr_free];
	/* In address order: buffers freed together come back as a run. */
	sort_bufs(out, got);
	if (got < n) {
		size_t more = n - got;
		char *base = NULL;

		if (block_room(sw)) {
			uint64_t t0 = tp_vmm_now_ns(pg->vmm);

			base = tp_vmm_host_alloc(pg->vmm, more * pg->chunk);
			sw->grown_ns += tp_vmm_now_ns(pg->vmm) - t0;
			sw->grown_bytes += base ? more * pg->chunk : 0;
		}
		if (!base) {
			/* Give back what this call took. */
			while (got)
				sw->free[sw->nr_free++] = out[--got];
			return -ENOMEM;
		}
		/* In address order, for tp_swap_follows()'s search. */
		add_block(sw, base, more);
		for (size_t i = 0; i < more; i++)
			out[got++] = base + i * pg->chunk;
	}
	sw->used += n;
	if (sw->used > sw->peak)
		sw->peak = sw->used;
	if (grew)
		prepare_ahead(pg);
	return 0;
}
