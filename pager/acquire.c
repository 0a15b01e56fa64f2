/* SPDX-License-Identifier: MIT */
/*
 * Acquire and release: make a byte range of a tensor resident (waiting on
 * a prefetch in flight, reloading from host swap, regenerating through
 * lineage, backing never-written pages through backing.c) and pin it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

static void pin_range(struct tp_tensor *t, size_t first, size_t last, int d)
{
	for (size_t i = first; i <= last; i++) {
		struct tp_page *p = &t->pages[i];
		bool was = p->pins;

		p->pins += d;
		/* tp_page_set() keeps the count as pinned pages move. */
		if (p->state == TP_PAGE_RESIDENT && was != (p->pins != 0))
			tp_tensor_pinned_add(t, p->pins ? 1 : -1);
	}
	t->pins += d;
}

static bool range_evicted(const struct tp_tensor *t, size_t first,
			  size_t last)
{
	for (size_t i = first; i <= last; i++)
		if (t->pages[i].state == TP_PAGE_EVICTED)
			return true;
	return false;
}

/* A prefetched range is now used: count the hit, order compute after it. */
static int use_reloading(struct tp_pager *pg, struct tp_tensor *t,
			 size_t first, size_t last)
{
	struct tp_event *waited = NULL;
	bool late = false;
	int ret;

	for (size_t i = first; i <= last; i++) {
		struct tp_page *p = &t->pages[i];
		struct tp_event *ev;
		void *buf;

		if (p->state != TP_PAGE_RELOADING)
			continue;
		if (p->ev != waited) {
			late |= tp_vmm_event_query(pg->vmm, p->ev) != 0;
			if (pg->host_waits) {
				uint64_t t0 = tp_vmm_now_ns(pg->vmm);

				tp_vmm_wait_why("a reload");
				ret = tp_vmm_event_sync(pg->vmm, p->ev);
				pg->c.stall_ns += tp_vmm_now_ns(pg->vmm) - t0;
			} else {
				ret = tp_vmm_stream_wait(pg->vmm,
							 TP_STREAM_COMPUTE,
							 p->ev);
			}
			if (ret)
				return ret;
			waited = p->ev;
		}
		/* Compute is ordered after the copy: the page is usable. */
		buf = p->swap;
		ev = p->ev;
		p->swap = NULL;
		p->ev = NULL;
		tp_page_set(t, p, TP_PAGE_RESIDENT);
		tp_pager_reloaded_buffer(pg, t, p, buf, ev);
		tp_vmm_event_put(pg->vmm, ev);
	}
	if (t->prefetched) {
		/* The first use of a prefetched tensor: in time or late. */
		if (late)
			pg->c.prefetch_late++;
		else
			pg->c.prefetch_hits++;
		t->prefetched = false;
	}
	if (!t->inflight_pages && t->on_inflight) {
		t->on_inflight = false;
		cds_list_del(&t->inflight);
		if (t->pol_prefetch)
			tp_pager_prefetch_answer(pg, t, true);
	}
	return 0;
}

/*
 * An offloaded range that the victim ops would rather regenerate than
 * reload (DELTA §5.5): its swapped copies are dropped, the pages become
 * EVICTED and the regeneration below brings them back.
 */
static void prefer_regen(struct tp_pager *pg, struct tp_tensor *t,
			 size_t first, size_t last)
{
	bool offloaded = false;

	for (size_t i = first; i <= last && !offloaded; i++)
		offloaded = t->pages[i].state == TP_PAGE_OFFLOADED;
	if (!offloaded || !tp_pager_can_evict(pg, t) ||
	    !pg->victim.recompute_back(pg->victim.priv, t))
		return;
	tp_pager_drop_swapped(pg, t, first, last);
}

/*
 * vmm.mode = contiguous: like the caching allocators it stands for, a
 * tensor is one block, backed and pinned whole, never page by page; a
 * write of part of it keeps the rest's contents.
 */
static void whole_tensor(const struct tp_tensor *t, size_t off, size_t len,
			 size_t *first, size_t *last, bool *discard)
{
	*first = 0;
	*last = t->nr_pages - 1;
	if (discard && (off || len != t->bytes))
		*discard = false;
}

static int acquire_slab(struct tp_pager *pg, struct tp_tensor *t, size_t off,
			void **addr)
{
	t->pins++;
	t->last_access_ns = tp_vmm_now_ns(pg->vmm);
	t->access_seq = ++pg->access_seq;
	*addr = (void *)(t->va + off);
	return 0;
}

/* Complete the offloads in flight in pages [@first, @last]: their chunks
 * are leaving. */
static int settle_offloading(struct tp_pager *pg, struct tp_tensor *t,
			     size_t first, size_t last)
{
	for (size_t i = first; i <= last; i++) {
		if (t->pages[i].state == TP_PAGE_OFFLOADING) {
			uint64_t t0 = tp_vmm_now_ns(pg->vmm);
			int ret = tp_pager_settle(pg, t, i, i);

			pg->c.stall_ns += tp_vmm_now_ns(pg->vmm) - t0;
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * A failed replay may have written part of @t while a pin kept lineage
 * from dropping it: what it wrote cannot be trusted, so the pages go back
 * to EVICTED (all regenerable by definition). Those someone pins hold
 * what they held: a replay writes the same bytes.
 */
static void regen_failed(struct tp_pager *pg, struct tp_tensor *t)
{
	if (!t->pins && tp_pager_can_evict(pg, t))
		tp_pager_drop_contents(pg, t);
	else if (t->pins && tp_pager_can_evict(pg, t))
		tp_pager_evict_range(pg, t, 0, t->bytes);
	/* What it left mapped is what the replay wrote: nothing to keep. */
	for (size_t i = 0; i < t->nr_pages; i++)
		t->pages[i].left_mapped = false;
	tp_pager_cand_update(pg, t);
}

/*
 * Any page EVICTED, in the range or not, and the tensor is regenerated
 * whole: a partly evicted tensor (policy.partial_evict) then never has
 * pages pinned while a replay writes it, so a replay that fails can drop
 * everything it wrote. Except a range with none EVICTED of a tensor
 * someone else pins: an op run in parts holds the rows it has still to
 * read and has let go those it read (policy.split); the range is there as
 * it is.
 *
 * Return: 0 with pages [@first, @last] pinned; an error with them still
 * pinned; or, when the replay failed, its error with them unpinned and
 * *@unpinned set.
 */
static int regenerate_evicted(struct tp_pager *pg, struct tp_tensor *t,
			      size_t first, size_t last, unsigned mode,
			      bool *unpinned)
{
	bool unpin;
	int ret;

	if (!t->evicted_pages ||
	    (t->pins != 1 && !range_evicted(t, first, last)))
		return 0;
	if (mode & TP_ACQ_NO_REGEN)
		return -ESTALE;
	/*
	 * The replay rewrites every page: those a partial eviction left
	 * resident are worth nothing until it is done, and are not pinned
	 * while it makes room for the inputs it regenerates.
	 */
	unpin = t->resident_pages > 0;
	if (unpin) {
		pin_range(t, first, last, -1);
		tp_pager_cand_update(pg, t);
	}
	ret = pg->regen.regenerate(pg->regen.priv, t);
	if (!ret && t->evicted_pages)
		ret = -TP_ENOREGEN;
	if (ret) {
		if (!unpin)
			pin_range(t, first, last, -1);
		*unpinned = true;
		regen_failed(pg, t);
		return ret;
	}
	if (unpin) {
		pin_range(t, first, last, 1);
		tp_pager_cand_update(pg, t);
	}
	return 0;
}

/*
 * Back the pages of [@first, @last] that need a chunk, making room for
 * them first (or, with TP_ACQ_NO_RECLAIM, only if they fit as it is).
 * *@need: how many there were.
 */
static int back_range(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		      size_t last, bool discard, unsigned mode, size_t *need)
{
	bool whole;
	int ret;

	*need = tp_pages_needing_chunks(t, first, last, discard);
	if (!*need)
		return 0;
	/* A range of its size kept mapped may serve the whole tensor. */
	whole = *need == t->nr_pages && tp_range_cache_may_adopt(pg, t);
	if (whole && tp_range_cache_adopt(pg, t))
		return 0;
	if (mode & TP_ACQ_NO_RECLAIM) {
		tp_vmm_reap(pg->vmm);
		ret = tp_vmm_chunks_fit(pg->vmm, *need) ? 0 : -ENOMEM;
	} else {
		ret = tp_pager_make_room_for(pg, whole ? t : NULL, *need);
	}
	if (ret)
		return ret;
	/* The room made may be a range of its size. */
	if (whole && tp_range_cache_adopt(pg, t))
		return 0;
	ret = tp_pager_rereserve(pg, t);
	if (ret)
		return ret;
	return tp_pager_back_pages(pg, t, first, last, discard, false);
}

/*
 * The range is resident and pinned: drop the swap cache's copies of what
 * is written, note the access, and run what an access may make due (the
 * prefetcher, writebacks).
 */
static void note_access(struct tp_pager *pg, struct tp_tensor *t,
			size_t first, size_t last, unsigned mode)
{
	/* What is written no longer equals the swap cache's copy: dropped
	 * now that every page of the range is resident (reloads keep it). */
	if ((mode & TP_WRITE) && t->cached_pages)
		tp_pager_uncache(pg, t, first, last);
	t->last_access_ns = tp_vmm_now_ns(pg->vmm);
	t->access_seq = ++pg->access_seq;
	/* Each access may make the prefetcher's prediction due; with nothing
	 * in host swap there is nothing to bring back. */
	if (pg->victim.prefetch_pick && pg->swap.used &&
	    !(mode & TP_ACQ_NO_RECLAIM))
		tp_pager_prefetch_run(pg);
	if (!(mode & TP_ACQ_NO_RECLAIM))
		tp_pager_writeback_run(pg);
}

#ifdef TP_DEBUG
/*
 * Every page an acquire hands out is backed by a handle mapped where the
 * tensor's address says: an op that reads it would fault on a GPU.
 */
static void check_mapped(struct tp_pager *pg, struct tp_tensor *t,
			 size_t first, size_t last)
{
	for (size_t i = first; i <= last; i++) {
		const struct tp_page *p = &t->pages[i];
		size_t s;

		if (p->state != TP_PAGE_RESIDENT && p->state != TP_PAGE_RELOADING)
			continue;
		s = tp_pager_handle_start(pg, t, i);
		if (p->chunk && p->chunk->va == t->va + s * pg->chunk)
			continue;
		fprintf(stderr, "tpager: tensor %llu page %zu (%s): handle mapped at %#lx, the tensor's page at %#lx\n",
			(unsigned long long)t->id, i, tp_page_state_name(p->state),
			p->chunk ? (unsigned long)p->chunk->va : 0UL,
			(unsigned long)(t->va + s * pg->chunk));
		abort();
	}
}
#endif

static int acquire(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		   size_t len, unsigned mode, void **addr)
{
	/* A scratch tensor's evicted pages come back unwritten. */
	bool discard = !(mode & TP_READ) || (t->flags & TP_SCRATCH);
	bool unpinned = false;
	size_t first, last, need = 0;
	int ret;

	if (!len || off > t->bytes || len > t->bytes - off || t->refs == 0)
		return -EINVAL;
	if (pg->victim.on_acquire)
		pg->victim.on_acquire(pg->victim.priv, t);
	if (t->slab)
		return acquire_slab(pg, t, off, addr);
	first = off / pg->chunk;
	last = (off + len - 1) / pg->chunk;
	if (tp_vmm_pool_contiguous(pg->vmm))
		whole_tensor(t, off, len, &first, &last, &discard);
	if (t->resident_pages == t->nr_pages && !t->prefetched) {
		/* The hot path: resident, nothing in flight, nothing to do
		 * but pin. */
		pin_range(t, first, last, 1);
		tp_pager_cand_update(pg, t);
		goto out;
	}
	/*
	 * What left and is still mapped, untaken, comes back as it was
	 * (before a poll reaps the unmaps that are due); of a tensor whose
	 * rows an op in parts reads, only the range: the rows it read and
	 * dropped stay gone.
	 */
	if (t->rows_held)
		tp_pager_rescue(pg, t, first, last);
	else
		tp_pager_rescue(pg, t, 0, t->nr_pages - 1);
	tp_pager_poll(pg);
	ret = settle_offloading(pg, t, first, last);
	if (ret)
		return ret;

	/* Pinned from here: neither a victim nor moved by what we call. */
	pin_range(t, first, last, 1);
	tp_pager_cand_update(pg, t);

	if (!discard && !(mode & TP_ACQ_NO_REGEN) && pg->victim.recompute_back)
		prefer_regen(pg, t, first, last);
	if (!discard) {
		ret = regenerate_evicted(pg, t, first, last, mode, &unpinned);
		if (unpinned)
			return ret;
		if (ret)
			goto err_unpin;
	}
	ret = back_range(pg, t, first, last, discard, mode, &need);
	if (ret)
		goto err_unpin;
	ret = use_reloading(pg, t, first, last);
	if (ret)
		goto err_unpin;
	if (need && !(mode & TP_ACQ_NO_RECLAIM))
		tp_pager_watermark(pg);
out:
	note_access(pg, t, first, last, mode);
	*addr = (void *)(t->va + off);
#ifdef TP_DEBUG
	check_mapped(pg, t, first, last);
#endif
	return 0;

err_unpin:
	pin_range(t, first, last, -1);
	tp_pager_cand_update(pg, t);
	return ret;
}

int tp_pager_acquire(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		     size_t len, unsigned mode, void **addr)
{
	int ret;

	tp_pager_work_begin(pg);
	ret = acquire(pg, t, off, len, mode, addr);
	tp_pager_work_end(pg);
	return ret;
}

int tp_pager_release(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		     size_t len)
{
	size_t first, last;

	if (!len || off > t->bytes || len > t->bytes - off || !t->pins)
		return -EINVAL;
	if (t->slab) {
		t->pins--;
		return 0;
	}
	first = off / pg->chunk;
	last = (off + len - 1) / pg->chunk;
	if (tp_vmm_pool_contiguous(pg->vmm))
		whole_tensor(t, off, len, &first, &last, NULL);
	for (size_t i = first; i <= last; i++)
		if (!t->pages[i].pins)
			return -EINVAL;
	tp_pager_note_use(pg, t);
	pin_range(t, first, last, -1);
	/* Unpinned, it is a candidate again, the most recently used. */
	tp_pager_cand_update(pg, t);
	return 0;
}

void tp_pager_address_given(struct tp_tensor *t)
{
	t->addr_shown = true;
}

/*
 * Pin [off, off + len) of @t for the user; for a write, lineage lets go
 * of @t's contents first (tp_regen_ops.on_write): neither what was made
 * from them nor @t itself may be regenerated from what the user is
 * about to overwrite.
 */
int tp_pager_user_acquire(struct tp_pager *pg, struct tp_tensor *t, size_t off,
			size_t len, unsigned mode, void **addr)
{
	int ret = tp_pager_acquire(pg, t, off, len, mode, addr);

	if (ret)
		return ret;
	if ((mode & TP_WRITE) && pg->regen.on_write)
		ret = pg->regen.on_write(pg->regen.priv, t);
	/* The caller's work on the compute stream comes after the maps. */
	if (!ret)
		ret = tp_vmm_gate(pg->vmm, TP_STREAM_COMPUTE);
	if (ret)
		tp_pager_release(pg, t, off, len);
	return ret;
}
