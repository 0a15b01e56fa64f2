/* SPDX-License-Identifier: MIT */
/*
 * The ways a tensor's pages leave and come back ahead of use: offload to
 * host swap, prefetch (eviction: evict.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "tracer/tracer.h"
#include "pager/pager_int.h"

/* A prefetched tensor leaving again before anyone used it. */
void tp_pager_note_leave(struct tp_pager *pg, struct tp_tensor *t)
{
	if (t->prefetched) {
		pg->c.prefetch_wasted++;
		t->prefetched = false;
	}
}

/*
 * The pages an offload takes: every resident one of an unpinned tensor
 * (@range false), or, of a range, the whole handles inside it that are
 * resident and unpinned (a handle leaves whole or not at all).
 */
struct leave_span {
	size_t first, last;
	bool range;
};

static bool leaves(const struct tp_pager *pg, const struct tp_tensor *t,
		   size_t i, const struct leave_span *s)
{
	if (!s->range)
		return t->pages[i].state == TP_PAGE_RESIDENT;
	return i >= s->first && i <= s->last &&
	       tp_pager_handle_can_go(pg, t, i, s->first, s->last);
}

/* Order the d2h stream after the compute work issued so far. */
static int d2h_after_compute(struct tp_pager *pg)
{
	struct tp_event *ev = tp_pager_compute_event(pg);
	int ret;

	if (!ev)
		return -errno;
	ret = tp_vmm_stream_wait(pg->vmm, TP_STREAM_D2H, ev);
	tp_vmm_event_put(pg->vmm, ev);
	return ret;
}

/*
 * Whether every page of @t leaving has its copy in the swap cache, landed:
 * its chunks then wait for compute only (as an eviction's do), not for
 * whatever else is queued on the d2h stream.
 */
static bool cache_landed(struct tp_pager *pg, const struct tp_tensor *t,
			 const struct leave_span *s)
{
	for (size_t i = s->first; i <= s->last; i++) {
		const struct tp_page *p = &t->pages[i];

		if (leaves(pg, t, i, s) &&
		    (!p->swap || (p->ev && tp_vmm_event_query(pg->vmm, p->ev))))
			return false;
	}
	return true;
}

/*
 * Hand the pages leaving, run by run, to deferred unmaps after @ev; each
 * page takes its buffer from @bufs (its cached copy's, or a fresh one its
 * contents were copied into). A run that cannot be handed over stays
 * RESIDENT: a fresh buffer is freed once the copy into it is done, a
 * cached copy stays cached.
 */
static int offload_commit(struct tp_pager *pg, struct tp_tensor *t,
			  const struct leave_span *s, void **bufs,
			  struct tp_event *ev, size_t *moved, size_t *copied)
{
	struct tp_chunk **run;
	size_t i = s->first, k = 0;
	int ret = 0;

	*moved = *copied = 0;
	while (i <= s->last) {
		size_t start = i, m = 0;

		if (!leaves(pg, t, i, s)) {
			i++;
			continue;
		}
		/* Pages leave with their whole handles (leaves()). */
		while (i <= s->last && leaves(pg, t, i, s)) {
			m++;
			i++;
		}
		if (!ret) {
			run = tp_pager_run_chunks(pg, t, start, m);
			ret = run ? tp_vmm_unmap_after(pg->vmm,
						       t->va + start * pg->chunk,
						       run, m, ev) : -ENOMEM;
		}
		for (size_t j = start; j < start + m; j++, k++) {
			struct tp_page *p = &t->pages[j];
			bool cached = p->swap != NULL;

			if (ret) {
				if (!cached)
					tp_swap_put_after(pg, bufs[k], ev);
				continue;
			}
			if (cached) {
				/* The copy is the cache's: it leaves it. */
				if (p->ev)
					tp_vmm_event_put(pg->vmm, p->ev);
				t->cached_pages--;
				pg->swap.cached--;
			} else {
				p->swap = bufs[k];
				pg->c.bytes_d2h += tp_page_len(pg, t, j);
				(*copied)++;
			}
			p->ev = tp_vmm_event_get(ev);
			p->left_mapped = true;
			tp_page_set(t, p, TP_PAGE_OFFLOADING);
			(*moved)++;
		}
		if (!ret)
			tp_pager_held_add(pg, -(long)m);
	}
	return ret;
}

/*
 * Fresh buffers for the @n pages of @t leaving that host swap holds no
 * copy of, dropping other tensors' cached copies when swap is full; into
 * @bufs (one per page leaving, in page order) with the cached copies' own.
 */
static int take_buffers(struct tp_pager *pg, struct tp_tensor *t,
			const struct leave_span *s, void **bufs, void **fresh,
			size_t n)
{
	size_t room, k = 0, f = 0;
	int ret;

	if (n) {
		room = tp_swap_room_free(pg);
		if (room < n)
			tp_pager_cache_shrink(pg, n - room, t);
		ret = tp_swap_take(pg, fresh, n);
		if (ret)
			return ret;
	}
	for (size_t i = s->first; i <= s->last; i++) {
		struct tp_page *p = &t->pages[i];

		if (leaves(pg, t, i, s))
			bufs[k++] = p->swap ? p->swap : fresh[f++];
	}
	return 0;
}

/*
 * Copy the pages of @t leaving that host swap holds no copy of into
 * their buffers in @bufs (one per page leaving, in page order) on the
 * d2h stream; *@bytes: how much.
 */
static int copy_out(struct tp_pager *pg, struct tp_tensor *t,
		    const struct leave_span *s, void **bufs, uint64_t *bytes)
{
	size_t k = 0;
	int ret;

	*bytes = 0;
	for (size_t i = s->first; i <= s->last;) {
		size_t len, m;

		if (!leaves(pg, t, i, s)) {
			i++;
			continue;
		}
		if (t->pages[i].swap) {
			/* The swap cache holds it: nothing to copy. */
			i++;
			k++;
			continue;
		}
		/* Adjacent pages into adjacent buffers: one copy. */
		len = tp_page_len(pg, t, i);
		for (m = 1; i + m <= s->last && leaves(pg, t, i + m, s) &&
		     !t->pages[i + m].swap &&
		     tp_swap_follows(pg, bufs[k + m - 1], bufs[k + m]); m++)
			len += tp_page_len(pg, t, i + m);
		ret = tp_vmm_copy_d2h(pg->vmm, bufs[k], t->va + i * pg->chunk,
				      len, TP_STREAM_D2H);
		if (ret)
			return ret;
		*bytes += len;
		i += m;
		k += m;
	}
	return 0;
}

/*
 * What an offload or a writeback holds until it returns, let go: its
 * copy's completion and start events (NULL when not taken or handed
 * on) and its buffer list. Return: @ret.
 */
static int copy_finish(struct tp_pager *pg, struct tp_event *ev,
		       struct tp_event *start, void **bufs, int ret)
{
	if (ev)
		tp_vmm_event_put(pg->vmm, ev);
	if (start)
		tp_vmm_event_put(pg->vmm, start);
	free(bufs);
	return ret;
}

/*
 * Before @t's pages leave (offload, evict): -EBUSY while pinned, else
 * its copies in flight have landed.
 */
int tp_pager_settle_to_leave(struct tp_pager *pg, struct tp_tensor *t)
{
	if (t->pins)
		return -EBUSY;
	tp_pager_poll(pg);
	if (!t->inflight_pages)
		return 0;
	return tp_pager_settle(pg, t, 0, t->nr_pages - 1);
}

/*
 * Offload the pages of @t in @s (settled: no copy of them in flight) to
 * host swap: copies after compute, the chunks unmapped once they land.
 */
static int offload_span(struct tp_pager *pg, struct tp_tensor *t,
			const struct leave_span *s)
{
	struct tp_event *ev = NULL, *start = NULL;
	size_t n = 0, dirty = 0, moved, copied;
	void **bufs, **fresh;
	uint64_t t0, bytes;
	bool landed;
	int ret;

	for (size_t i = s->first; i <= s->last; i++) {
		if (!leaves(pg, t, i, s))
			continue;
		n++;
		dirty += !t->pages[i].swap;
	}
	if (!n)
		return 0;
	bufs = calloc(n + dirty, sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	fresh = bufs + n;
	ret = take_buffers(pg, t, s, bufs, fresh, dirty);
	if (ret)
		goto out_free;
	landed = !dirty && cache_landed(pg, t, s);
	if (!landed) {
		/* The copies, new and cached, come after compute. */
		ret = d2h_after_compute(pg);
		if (ret)
			goto err_put;
		if (dirty)
			start = tp_pager_copy_start(pg, TP_STREAM_D2H);
	}
	t0 = tp_vmm_now_ns(pg->vmm);
	ret = copy_out(pg, t, s, bufs, &bytes);
	if (ret)
		goto err_sync;
	if (landed) {
		ev = tp_pager_compute_event(pg);
		if (!ev) {
			ret = -errno;
			goto err_put;
		}
	} else {
		ret = tp_pager_copy_event(pg, TP_STREAM_D2H, &ev);
		if (ret)
			goto err_sync;
	}
	ret = offload_commit(pg, t, s, bufs, ev, &moved, &copied);
	if (moved) {
		if (copied) {
			tp_pager_copy_issued(pg, start, ev, t0, bytes, true);
			start = NULL;
		} else {
			pg->c.cache_offloads++;
		}
		tp_tracer_copy(pg->tracer, TP_STREAM_D2H, false, t->id,
			       bytes, t0, (uint64_t)pg->swap.used * pg->chunk);
		pg->c.offloads++;
		tp_pager_note_leave(pg, t);
		tp_pager_inflight_add(pg, t);
	}
	tp_pager_cand_update(pg, t);
	goto out_free;

err_sync:
	/* Copies in flight write into the buffers: let them land first. */
	tp_vmm_stream_sync(pg->vmm, TP_STREAM_D2H);
err_put:
	if (dirty)
		tp_swap_put(pg, fresh, dirty);
out_free:
	return copy_finish(pg, ev, start, bufs, ret);
}

int tp_pager_offload(struct tp_pager *pg, struct tp_tensor *t)
{
	struct leave_span s = { 0, t->nr_pages - 1, false };
	int ret;

	if (!tp_pager_can_offload(t))
		return -EPERM;
	ret = tp_pager_settle_to_leave(pg, t);
	if (ret || !t->resident_pages)
		return ret;
	return offload_span(pg, t, &s);
}

int tp_pager_offload_range(struct tp_pager *pg, struct tp_tensor *t,
			   size_t off, size_t len)
{
	struct leave_span s = { .range = true };
	int ret;

	if (!len || off > t->bytes || len > t->bytes - off)
		return -EINVAL;
	if (!tp_pager_can_offload(t) || tp_vmm_pool_contiguous(pg->vmm))
		return -EPERM;
	if (!tp_pager_pages_inside(pg, t, off, len, &s.first, &s.last))
		return 0;
	tp_pager_poll(pg);
	ret = tp_pager_settle(pg, t, s.first, s.last);
	if (ret)
		return ret;
	return offload_span(pg, t, &s);
}

/*
 * Copy @t's resident pages that host swap holds no copy of into the swap
 * cache, on the d2h stream after the compute issued so far; @t stays
 * resident. Only buffers free now are taken: a copy ahead of need never
 * pushes another out.
 */
int tp_pager_writeback(struct tp_pager *pg, struct tp_tensor *t)
{
	struct leave_span s = { 0, t->nr_pages - 1, false };
	struct tp_event *ev = NULL, *start = NULL;
	size_t res = t->resident_pages, n = res - t->cached_pages, k = 0;
	void **bufs, **fresh;
	uint64_t t0, bytes;
	int ret;

	if (!tp_pager_can_offload(t))
		return -EPERM;
	/* Pinned, it may be written by work not issued yet. */
	if (t->pins || t->inflight_pages)
		return -EBUSY;
	if (!n)
		return 0;
	if (tp_swap_room_free(pg) < n)
		return -ENOSPC;
	bufs = calloc(res + n, sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	fresh = bufs + res;
	/* Free buffers suffice: no cached copy is dropped for these. */
	ret = take_buffers(pg, t, &s, bufs, fresh, n);
	if (ret)
		goto out_free;
	ret = d2h_after_compute(pg);
	if (ret)
		goto err_put;
	start = tp_pager_copy_start(pg, TP_STREAM_D2H);
	t0 = tp_vmm_now_ns(pg->vmm);
	ret = copy_out(pg, t, &s, bufs, &bytes);
	if (ret)
		goto err_sync;
	ret = tp_pager_copy_event(pg, TP_STREAM_D2H, &ev);
	if (ret)
		goto err_sync;
	for (size_t i = 0; i < t->nr_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_RESIDENT)
			continue;
		if (!p->swap)
			tp_pager_cache_page(pg, t, p, bufs[k], ev);
		k++;
	}
	pg->c.bytes_d2h += bytes;
	tp_pager_copy_issued(pg, start, ev, t0, bytes, true);
	start = NULL;
	tp_tracer_copy(pg->tracer, TP_STREAM_D2H, true, t->id, bytes, t0,
		       (uint64_t)pg->swap.used * pg->chunk);
	pg->c.writebacks++;
	goto out_free;

err_sync:
	tp_vmm_stream_sync(pg->vmm, TP_STREAM_D2H);
err_put:
	tp_swap_put(pg, fresh, n);
out_free:
	return copy_finish(pg, ev, start, bufs, ret);
}

void tp_pager_writeback_run(struct tp_pager *pg)
{
	struct tp_tensor *t;

	if (!pg->victim.writeback_pick)
		return;
	/* Only an idle link: a copy ahead of need never delays one due. */
	if (tp_pager_copy_backlog(pg, true))
		return;
	if (pg->victim.writeback_pick(pg->victim.priv, &t, 1) == 1)
		tp_pager_writeback(pg, t);
}

/*
 * Bring @t's pages in host swap back: -ENOMEM without room for them, which
 * @make_room first makes from victims predicted to be used after @t
 * (tp_pager_make_room_ahead).
 */
static int prefetch(struct tp_pager *pg, struct tp_tensor *t, bool make_room)
{
	size_t n = 0;
	int ret;

	if (t->slab || t->refs == 0)
		return 0;
	/* Still mapped, untaken: back with no copy and no room to make. */
	tp_pager_rescue(pg, t, 0, t->nr_pages - 1);
	if (make_room) {
		/* Pages still leaving count: their chunks go first. */
		for (size_t i = 0; i < t->nr_pages; i++)
			n += t->pages[i].state == TP_PAGE_OFFLOADED ||
			     t->pages[i].state == TP_PAGE_OFFLOADING;
		if (n && !tp_vmm_chunks_fit(pg->vmm, n)) {
			ret = tp_pager_make_room_ahead(pg, t, n);
			if (ret)
				return ret;
		}
		n = 0;
	}
	tp_pager_poll(pg);
	for (size_t i = 0; i < t->nr_pages; i++) {
		/* Still leaving: the chunk must go before a fresh one comes. */
		if (t->pages[i].state == TP_PAGE_OFFLOADING) {
			ret = tp_pager_settle(pg, t, i, i);
			if (ret)
				return ret;
		}
		if (t->pages[i].state == TP_PAGE_OFFLOADED)
			n++;
	}
	/* Nothing to do, or already on its way back: never issued twice. */
	if (!n)
		return 0;
	tp_vmm_reap(pg->vmm);
	if (!tp_vmm_chunks_fit(pg->vmm, n))
		return -ENOMEM;
	ret = tp_pager_back_pages(pg, t, 0, t->nr_pages - 1, false, true);
	if (ret)
		return ret;
	/* Counted here whoever asked: tp_tensor_prefetch or the prefetcher. */
	pg->c.prefetch_issued++;
	t->prefetched = true;
	/*
	 * A prefetch is a use foretold: as stale as it was, the tensor would
	 * be the filter's first choice the moment it lands.
	 */
	t->last_access_ns = tp_vmm_now_ns(pg->vmm);
	t->access_seq = ++pg->access_seq;
	tp_pager_cand_update(pg, t);
	return 0;
}

int tp_pager_prefetch(struct tp_pager *pg, struct tp_tensor *t)
{
	return prefetch(pg, t, false);
}

void tp_pager_prefetch_answer(struct tp_pager *pg, struct tp_tensor *t, bool ok)
{
	t->pol_prefetch = false;
	if (pg->victim.prefetch_done)
		pg->victim.prefetch_done(pg->victim.priv, t, ok);
}

void tp_pager_prefetch_run(struct tp_pager *pg)
{
	struct tp_tensor *pick[8];
	size_t n;

	tp_vmm_reap(pg->vmm);
	n = pg->victim.prefetch_pick(pg->victim.priv, pick, 8);
	for (size_t i = 0; i < n; i++) {
		struct tp_tensor *t = pick[i];
		/* Room from tensors needed later, or no prefetch. */
		int ret = prefetch(pg, t, true);

		if (ret || !t->inflight_pages) {
			/* Refused, or nothing was in swap: answered now. */
			if (pg->victim.prefetch_done)
				pg->victim.prefetch_done(pg->victim.priv, t,
							 !ret);
			continue;
		}
		t->pol_prefetch = true;
	}
}
