/* SPDX-License-Identifier: MIT */
/*
 * Backing pages: a run of a tensor's pages gets handles from the pool and
 * is mapped, ordered after what the handles' previous owners still do,
 * and the pages that were offloaded are copied back (tp_pager_back_pages,
 * for acquire and prefetch).
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "tracer/tracer.h"
#include "pager/pager_int.h"

/* Whether page @p is one back_pages gives a chunk to. */
static bool backs(const struct tp_page *p, bool discard, bool prefetch)
{
	return prefetch ? p->state == TP_PAGE_OFFLOADED :
			  tp_page_needs_chunk(p, discard);
}

/*
 * Undo the maps of a failed back_pages: the runs of pages [first, last]
 * marked in @mapped, whose handles are in @chunks in page order.
 */
static void unback(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		   size_t last, const bool *mapped, struct tp_chunk **chunks)
{
	size_t k = 0;

	for (size_t i = first; i <= last;) {
		size_t start = i;

		if (!mapped[i - first]) {
			i++;
			continue;
		}
		while (i <= last && mapped[i - first])
			i++;
		tp_vmm_unmap(pg->vmm, t->va + start * pg->chunk, chunks + k,
			     i - start);
		tp_vmm_chunks_put(pg->vmm, chunks + k, i - start);
		k += i - start;
	}
}

/* One tp_pager_back_pages(): the pages it backs and what it did so far. */
struct backing {
	struct tp_pager *pg;
	struct tp_tensor *t;
	size_t first, last;
	bool discard, prefetch;
	size_t n;			/* pages backed */
	struct tp_chunk **chunks;	/* their handles, in page order */
	bool *mapped;			/* per page of the range: mapped now */
	struct tp_event *ev, *cstart;	/* the copies back: end and start */
	size_t copies, copied;		/* copies issued, their bytes */
	uint64_t t0;			/* when the copies were issued */
};

/* Count the pages to back and make room for their handles; 0 or -errno. */
static int backing_new(struct backing *b)
{
	for (size_t i = b->first; i <= b->last; i++)
		if (backs(&b->t->pages[i], b->discard, b->prefetch))
			b->n++;
	if (!b->n)
		return 0;
	b->chunks = calloc(b->n, sizeof(*b->chunks));
	b->mapped = calloc(b->last - b->first + 1, sizeof(*b->mapped));
	if (!b->chunks || !b->mapped)
		return -ENOMEM;
	if (!tp_vmm_chunks_takeable(b->pg->vmm, b->n))
		return -ENOMEM;
	return 0;
}

/*
 * Each run of contiguous pages gets its backing (one handle, or a few of
 * the largest size, on the extent pool) and is mapped in one call. Coop
 * §3.4: the policy sends cheap tensors to the contiguous pool's right
 * end.
 */
static int map_runs(struct backing *b)
{
	struct tp_pager *pg = b->pg;
	struct tp_tensor *t = b->t;
	enum tp_pool_side side = t->pol.right ? TP_SIDE_RIGHT : TP_SIDE_LEFT;
	size_t k = 0;
	int ret;

	for (size_t i = b->first; i <= b->last;) {
		size_t start = i, m = 0;

		while (i <= b->last &&
		       backs(&t->pages[i], b->discard, b->prefetch)) {
			m++;
			i++;
		}
		if (!m) {
			i++;
			continue;
		}
		ret = tp_vmm_chunks_take_side(pg->vmm, b->chunks + k, m, side);
		if (ret)
			return ret;
		ret = tp_vmm_map_ahead(pg->vmm, t->va + start * pg->chunk,
				       b->chunks + k, m);
		if (ret) {
			tp_vmm_chunks_put(pg->vmm, b->chunks + k, m);
			return ret;
		}
		for (size_t j = start; j < start + m; j++)
			b->mapped[j - b->first] = true;
		k += m;
	}
	return 0;
}

/*
 * What the handles' previous owners still do with them (their last ops,
 * their offloads) comes first: compute, and the copies back, are ordered
 * after it.
 */
static int order_after_owners(struct backing *b)
{
	struct tp_pager *pg = b->pg;
	uint64_t t0 = tp_vmm_now_ns(pg->vmm);
	int ret;

	ret = tp_vmm_chunks_order(pg->vmm, b->chunks, b->n,
				  1u << TP_STREAM_COMPUTE |
				  (b->discard ? 0 : 1u << TP_STREAM_H2D) |
				  (pg->host_waits ? TP_ORDER_HOST : 0));
	pg->c.stall_ns += tp_vmm_now_ns(pg->vmm) - t0;
	return ret;
}

/*
 * Copy offloaded contents back on the h2d stream, adjacent buffers into
 * adjacent pages in one copy; unless prefetching, compute (or the host)
 * waits for them.
 */
static int copy_back(struct backing *b)
{
	struct tp_pager *pg = b->pg;
	struct tp_tensor *t = b->t;
	uint64_t s0;
	int ret;

	b->t0 = tp_vmm_now_ns(pg->vmm);
	for (size_t i = b->first; i <= b->last && !b->discard;) {
		struct tp_page *p = &t->pages[i];
		size_t len, m;

		if (p->state != TP_PAGE_OFFLOADED) {
			i++;
			continue;
		}
		len = tp_page_len(pg, t, i);
		for (m = 1; i + m <= b->last &&
		     p[m].state == TP_PAGE_OFFLOADED &&
		     tp_swap_follows(pg, p[m - 1].swap, p[m].swap); m++)
			len += tp_page_len(pg, t, i + m);
		if (!b->copies)
			b->cstart = tp_pager_copy_start(pg, TP_STREAM_H2D);
		ret = tp_vmm_copy_h2d(pg->vmm, t->va + i * pg->chunk, p->swap,
				      len, TP_STREAM_H2D);
		if (ret)
			return ret;
		b->copies++;
		b->copied += len;
		i += m;
	}
	if (!b->copies)
		return 0;
	ret = tp_pager_copy_event(pg, TP_STREAM_H2D, &b->ev);
	if (ret || b->prefetch)
		return ret;
	ret = tp_vmm_stream_wait(pg->vmm, TP_STREAM_COMPUTE, b->ev);
	if (ret || !pg->host_waits)
		return ret;
	s0 = tp_vmm_now_ns(pg->vmm);
	tp_vmm_wait_why("a reload");
	ret = tp_vmm_event_sync(pg->vmm, b->ev);
	if (ret)
		return ret;
	pg->c.stall_ns += tp_vmm_now_ns(pg->vmm) - s0;
	return 0;
}

/* The pages take their handles and states, and the copies are counted;
 * nothing here fails. */
static void commit(struct backing *b)
{
	struct tp_pager *pg = b->pg;
	struct tp_tensor *t = b->t;
	size_t k = 0;

	for (size_t i = b->first; i <= b->last; i++) {
		struct tp_page *p = &t->pages[i];

		if (!b->mapped[i - b->first])
			continue;
		tp_page_set_chunk(t, p, b->chunks[k++]);
		if (p->state == TP_PAGE_OFFLOADED) {
			void *buf = p->swap;

			tp_page_set(t, p, TP_PAGE_RELOADING);
			if (!b->discard) {
				pg->c.bytes_h2d += tp_page_len(pg, t, i);
				if (b->prefetch) {
					p->ev = tp_vmm_event_get(b->ev);
					continue;
				}
			}
			p->swap = NULL;
			tp_page_set(t, p, TP_PAGE_RESIDENT);
			/* Copied back (the host waited, or compute is ordered
			 * after @ev), or overwritten and worth nothing. */
			if (b->discard)
				tp_swap_put(pg, &buf, 1);
			else
				tp_pager_reloaded_buffer(pg, t, p, buf,
						pg->host_waits ? NULL : b->ev);
			continue;
		}
		tp_page_set(t, p, TP_PAGE_RESIDENT);
	}
	tp_pager_held_add(pg, b->n);
	if (b->copies) {
		pg->c.reloads++;
		tp_pager_copy_issued(pg, b->cstart, b->ev, b->t0, b->copied,
				     false);
		b->cstart = NULL;
		tp_tracer_copy(pg->tracer, TP_STREAM_H2D, b->prefetch,
			       t->id, b->copied, b->t0,
			       (uint64_t)pg->swap.used * pg->chunk);
	}
	if (b->prefetch && b->copies)
		tp_pager_inflight_add(pg, t);
}

int tp_pager_back_pages(struct tp_pager *pg, struct tp_tensor *t,
			size_t first, size_t last, bool discard, bool prefetch)
{
	struct backing b = {
		.pg = pg, .t = t, .first = first, .last = last,
		.discard = discard, .prefetch = prefetch,
	};
	int ret;

	ret = backing_new(&b);
	if (ret || !b.n)
		goto out_free;
	ret = map_runs(&b);
	if (!ret)
		ret = order_after_owners(&b);
	if (ret)
		goto err_unback;
	ret = copy_back(&b);
	if (ret)
		goto err_sync;
	commit(&b);
	goto out_free;

err_sync:
	/* Copies may be in flight into the new chunks: let them finish. */
	tp_vmm_stream_sync(pg->vmm, TP_STREAM_H2D);
err_unback:
	unback(pg, t, first, last, b.mapped, b.chunks);
out_free:
	if (b.ev)
		tp_vmm_event_put(pg->vmm, b.ev);
	if (b.cstart)
		tp_vmm_event_put(pg->vmm, b.cstart);
	free(b.mapped);
	free(b.chunks);
	return ret;
}
