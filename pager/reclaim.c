/* SPDX-License-Identifier: MIT */
/*
 * Making room: cached ranges give their chunks back first, then idle slab
 * chunks, then victims chosen by the victim ops leave; chunks already on
 * their way back (deferred unmaps) are waited for rather than sending
 * more tensors away.
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "base/array.h"
#include "pager/pager_int.h"

int tp_pager_leave(struct tp_pager *pg, struct tp_tensor *t, enum tp_leave how,
		   size_t most)
{
	return how == TP_LEAVE_EVICT ? tp_pager_evict_part(pg, t, most) :
				       tp_pager_offload(pg, t);
}

/*
 * Whether @t, in flight, keeps resident pages no one pins (an op in parts
 * sent some of its rows to host swap): a candidate once its copies land.
 */
static bool inflight_candidate(const struct tp_tensor *t)
{
	return !t->prefetched && !t->pins && t->resident_pages && t->refs &&
	       !(t->flags & TP_NO_PAGING);
}

static void count_reclaimable(struct tp_pager *pg, struct tp_tensor *t,
			      size_t *sum, size_t *room)
{
	if (tp_pager_can_evict(pg, t)) {
		*sum += t->resident_pages;
	} else if (tp_pager_can_offload(t) && t->resident_pages <= *room) {
		/* An offload moves the whole tensor or nothing. */
		*sum += t->resident_pages;
		*room -= t->resident_pages;
	}
}

/*
 * Whether the candidates could give back @want chunks: evictable pages
 * all, offloadable tensors as far as host swap has room for them whole.
 * An upper bound of what the victim ops can find, so that a request
 * beyond it fails before anything moves. Only candidates are walked, and
 * only until @want is covered: the usual shortfall is a chunk or two.
 */
static bool reclaimable(struct tp_pager *pg, size_t want, size_t extra_room)
{
	size_t room = tp_swap_room(pg), sum = 0;
	struct tp_tensor *t;

	if (room != SIZE_MAX)
		room += extra_room;
	cds_list_for_each_entry(t, &pg->cands, cand) {
		if (sum >= want)
			return true;
		count_reclaimable(pg, t, &sum, &room);
	}
	/* Those that are candidates once their copies land (wait_pending()). */
	cds_list_for_each_entry(t, &pg->inflight, inflight) {
		if (sum >= want)
			return true;
		if (inflight_candidate(t))
			count_reclaimable(pg, t, &sum, &room);
	}
	return sum >= want;
}

/* Chunks held by prefetches in flight, which become candidates when they
 * land. */
static size_t prefetch_pages(struct tp_pager *pg)
{
	struct tp_tensor *t;
	size_t n = 0;

	cds_list_for_each_entry(t, &pg->inflight, inflight)
		if (t->prefetched && !t->pins)
			n += t->inflight_pages;
	return n;
}

/*
 * Wait for the oldest prefetch in flight to land, so that it can be a
 * victim: the room a demand needs comes before a prediction. Return
 * whether one landed.
 */
static bool land_prefetch(struct tp_pager *pg)
{
	struct tp_tensor *t;

	cds_list_for_each_entry(t, &pg->inflight, inflight) {
		uint64_t t0;
		int ret;

		if (!t->prefetched || t->pins || !t->inflight_pages)
			continue;
		t0 = tp_vmm_now_ns(pg->vmm);
		ret = tp_pager_settle(pg, t, 0, t->nr_pages - 1);
		pg->c.stall_ns += tp_vmm_now_ns(pg->vmm) - t0;
		return !ret;
	}
	return false;
}

/*
 * Host swap holding copies of tensors lineage can regenerate: droppable
 * (OFFLOADED -> EVICTED) when what must be offloaded (an uncomputable
 * tensor) finds swap full. Count them (@drop false), or drop them until
 * @want are free (@drop true). Walks every tensor: swap is full, rarely.
 */
static size_t swap_droppable(struct tp_pager *pg, size_t want, bool drop)
{
	struct tp_tensor *t;
	size_t n = 0;

	cds_list_for_each_entry(t, &pg->tensors, link) {
		size_t k = t->nr_pages - t->resident_pages - t->evicted_pages;

		if (n >= want)
			break;
		if (!k || t->pins || t->inflight_pages || t->dead ||
		    !tp_pager_can_evict(pg, t))
			continue;
		if (drop) {
			tp_pager_drop_swapped(pg, t, 0, t->nr_pages - 1);
			tp_pager_cand_update(pg, t);
		}
		n += k;
	}
	return n;
}

struct skipped {
	struct tp_tensor **t;
	size_t n, cap;
	/* a victim could not be offloaded for want of host swap */
	bool swap_short;
};

/* Keep @t out of this round: it was chosen and could not leave. */
static void skip(struct tp_pager *pg, struct skipped *s, struct tp_tensor *t)
{
	if (s->n == s->cap) {
		struct tp_tensor **p;

		p = tp_array_grow(s->t, &s->cap,
				  s->cap + 1, sizeof(*p), 16);
		if (!p)
			return;
		s->t = p;
	}
	/* A transient pin keeps it from being offered again. */
	t->pins++;
	tp_pager_cand_update(pg, t);
	s->t[s->n++] = t;
}

static void unskip(struct tp_pager *pg, struct skipped *s)
{
	for (size_t i = 0; i < s->n; i++) {
		s->t[i]->pins--;
		tp_pager_cand_update(pg, s->t[i]);
	}
	free(s->t);
}

/*
 * Bytes of copies to host that must land before @want chunks on their
 * way back are free: those in flight, oldest first, until they cover it.
 */
static uint64_t pending_wait_bytes(const struct tp_pager *pg, size_t want)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < pg->nr_copies; i++) {
		if (!pg->copies[i].d2h)
			continue;
		bytes += pg->copies[i].bytes;
		if (bytes >= (uint64_t)want * pg->chunk)
			break;
	}
	return bytes;
}

/*
 * Whether a victim evicted gives only the pages lacking (the victim ops
 * say so; never on the contiguous pool, whose room must be one run).
 */
static bool partial_evict(struct tp_pager *pg)
{
	return pg->victim.partial_evict && !tp_vmm_pool_contiguous(pg->vmm) &&
	       pg->victim.partial_evict(pg->victim.priv);
}

/*
 * Send one victim away. Return 0 when something left (or was skipped and
 * another may), -ENOENT when no candidate is left or, @ahead, none
 * qualifies for leaving ahead of need (see choose_ahead in hooks.h:
 * @ahead_of is the tensor a prefetch makes room for, NULL for a
 * proactive release), or, @wait_bytes, none leaves for less than waiting
 * for that much to go out (choose_over_wait); -TP_EWORK past the paging
 * work bound, before choosing.
 */
static int send_victim(struct tp_pager *pg, size_t need, bool ahead,
		       const struct tp_tensor *ahead_of, uint64_t wait_bytes,
		       struct skipped *s)
{
	bool no_offload = tp_swap_room(pg) == 0;
	struct tp_tensor *v;
	enum tp_leave how;
	size_t most;
	int ret;

	ret = tp_pager_work(pg, 1, !ahead);
	if (ret)
		return ret;
	if (ahead && pg->victim.choose_ahead)
		ret = pg->victim.choose_ahead(pg->victim.priv, ahead_of,
					      need * pg->chunk, no_offload,
					      &v, &how);
	else if (ahead_of)
		ret = -ENOENT;	/* no prediction: free chunks only */
	else if (wait_bytes)
		ret = pg->victim.choose_over_wait ?
		      pg->victim.choose_over_wait(pg->victim.priv,
						  need * pg->chunk, wait_bytes,
						  no_offload, &v, &how) :
		      -ENOENT;
	else
		ret = pg->victim.choose(pg->victim.priv, need * pg->chunk,
					no_offload, &v, &how);
	if (ret == -TP_EWORK)
		return ret;
	/* Without choose_ahead, a release ahead of need still never evicts. */
	if (ret || (ahead && !ahead_of && !pg->victim.choose_ahead &&
		    how == TP_LEAVE_EVICT))
		return -ENOENT;
	/* A partial eviction takes only what is lacking. */
	most = how == TP_LEAVE_EVICT && partial_evict(pg) ? need : SIZE_MAX;
	/*
	 * But a victim of the size of the tensor the room is for leaves
	 * whole: its range, moved, is that room (pager.move_evicted), and
	 * the pages it would keep are regenerated with the rest anyway.
	 */
	if (most != SIZE_MAX && tp_range_cache_fits_room(pg, v))
		most = SIZE_MAX;
	tp_pager_cand_drop(pg, v);
	ret = tp_pager_leave(pg, v, how, most);
	if (ret == -ENOSPC)
		s->swap_short = true;
	/* What could not leave sits out the round; a partial eviction's
	 * rest stays a candidate. */
	if (ret || (v->resident_pages && most == SIZE_MAX))
		skip(pg, s, v);
	return 0;
}

/*
 * Whether a tensor whose rows an op in parts sent to host swap keeps
 * other pages resident, unpinned: no victim while its copies are in
 * flight, a candidate once they land.
 */
static bool inflight_rest(struct tp_pager *pg)
{
	struct tp_tensor *t;

	cds_list_for_each_entry(t, &pg->inflight, inflight)
		if (inflight_candidate(t))
			return true;
	return false;
}

/* Wait for the chunks on their way out, and for such tensors' copies. */
static int wait_pending(struct tp_pager *pg)
{
	int ret = tp_vmm_reap_wait(pg->vmm);

	if (!ret && inflight_rest(pg))
		tp_pager_poll(pg);
	return ret;
}

/*
 * Free @n chunks in the pool. For a demand (@ahead_of NULL), chunks on
 * their way back and prefetches in flight are waited for, and copies in
 * swap that lineage can regenerate dropped as the last resort. For room
 * to prefetch @ahead_of into, only victims needed after it leave and
 * nothing is waited for (-EAGAIN: the room is still on its way back).
 * @whole: the tensor the room is for, whole, if it may take a cached
 * range (tp_pager_make_room_for()); pg->room_for while this runs.
 */
static int free_chunks(struct tp_pager *pg, size_t n,
		       const struct tp_tensor *ahead_of,
		       const struct tp_tensor *whole)
{
	struct tp_vmm *vmm = pg->vmm;
	struct skipped s = { 0 };
	const struct tp_tensor *outer = pg->room_for;
	size_t free_now, pending, owed = 0, p0;
	bool synced = false;
	uint64_t wait, t0;
	int ret = 0;

	pg->room_for = whole;
	for (;;) {
		tp_vmm_reap(vmm);
		free_now = tp_vmm_chunks_free(vmm);
		/* Contiguous pool: enough free is not enough, it must be
		 * one run (contig_pool.c). */
		if (tp_vmm_chunks_fit(vmm, n))
			break;
		/* A range of its size, a victim's say, is its room whole. */
		if (whole && tp_range_cache_holds(pg, whole))
			break;
		/* Free memory kept mapped goes before anything waits. */
		if (tp_range_cache_shrink(pg))
			continue;
		pending = tp_vmm_chunks_pending(vmm);
		if (pending && free_now + pending >= n) {
			if (ahead_of) {
				ret = -EAGAIN;
				break;
			}
			/*
			 * Waiting on copies out may cost more than a victim
			 * that leaves at once. Its chunks come back once the
			 * compute queued before it is done (at once when
			 * the stream is idle): those not back are owed, and
			 * count against the shortfall. Asked again for the
			 * same shortfall, victim after victim would each
			 * leave for less than the same wait, until none is
			 * left.
			 */
			if (free_now + owed < n) {
				wait = pending_wait_bytes(pg, n - free_now - owed);
				p0 = pending;
				ret = wait ? send_victim(pg, n - free_now - owed,
							 false, NULL, wait, &s) :
					     -ENOENT;
				if (ret == -TP_EWORK)
					break;
				if (!ret) {
					pending = tp_vmm_chunks_pending(vmm);
					owed += pending > p0 ? pending - p0 : 0;
					continue;
				}
				ret = 0;
			}
			/* What is owed waits for compute, not for the copies. */
			if (owed && !synced) {
				synced = true;
				owed = 0;
				t0 = tp_vmm_now_ns(vmm);
				tp_vmm_wait_why("compute, for room owed");
				ret = tp_vmm_stream_sync(vmm, TP_STREAM_COMPUTE);
				pg->c.stall_ns += tp_vmm_now_ns(vmm) - t0;
				if (ret)
					break;
				continue;
			}
			/* Ordered reuse: the take has them, and its work
			 * waits for those copies on the device. */
			if (vmm->ordered_reuse)
				break;
			t0 = tp_vmm_now_ns(vmm);
			ret = tp_vmm_reap_wait(vmm);
			pg->c.stall_ns += tp_vmm_now_ns(vmm) - t0;
			if (ret)
				break;
			continue;
		}
		if (tp_slab_shrink(pg))
			continue;
		/* Contiguous: the victims must make one run of all n. */
		ret = send_victim(pg, tp_vmm_pool_contiguous(vmm) ? n :
				  n - free_now - pending, ahead_of != NULL,
				  ahead_of, 0, &s);
		if (!ret)
			continue;
		if (ret == -TP_EWORK)
			break;
		ret = 0;
		/*
		 * What is left must be offloaded and swap is full: copies
		 * lineage can regenerate make room. Only then: dropping a
		 * copy frees host memory, never a chunk, and turns a tensor
		 * that was one reload away into one a regeneration must
		 * bring back (a gradient evicted so must replay the backward
		 * it came from when its weight is updated).
		 */
		if (!ahead_of && ((pending && !wait_pending(pg)) ||
				  land_prefetch(pg) ||
				  ((s.swap_short || !tp_swap_room(pg)) &&
				   swap_droppable(pg, 1, true))))
			continue;
		ret = -ENOMEM;
		break;
	}
	pg->room_for = outer;
	unskip(pg, &s);
	return ret;
}

/*
 * Whether a demand for @want chunks that failed lacked host swap: the
 * candidates, every one able to leave (swap with room for each tensor
 * that must be offloaded), would have given them back.
 */
static bool swap_short(struct tp_pager *pg, size_t want)
{
	struct tp_tensor *t;
	size_t sum = 0;

	if (pg->swap.max == SIZE_MAX)
		return false;
	cds_list_for_each_entry(t, &pg->cands, cand) {
		if (tp_pager_can_evict(pg, t) || tp_pager_can_offload(t))
			sum += t->resident_pages;
		if (sum >= want)
			return true;
	}
	return false;
}

static size_t room_have(struct tp_pager *pg)
{
	struct tp_vmm *vmm = pg->vmm;

	return tp_vmm_chunks_free(vmm) + tp_vmm_chunks_pending(vmm) +
	       pg->cache.chunks + pg->slabs.idle + prefetch_pages(pg);
}

static int make_room(struct tp_pager *pg, size_t n,
		     const struct tp_tensor *whole)
{
	struct tp_vmm *vmm = pg->vmm;
	size_t have;
	int ret;

	tp_vmm_reap(vmm);
	if (tp_vmm_chunks_fit(vmm, n) ||
	    (whole && tp_range_cache_holds(pg, whole)))
		return 0;
	/*
	 * Cached ranges are free memory kept mapped, and the first to go
	 * (free_chunks()): they go before the pool's shape is judged, so
	 * that a contiguous pool's fragmentation counts them as free.
	 */
	while (tp_range_cache_shrink(pg))
		if (tp_vmm_chunks_fit(vmm, n))
			return 0;
	tp_vmm_frag_sample(vmm, n);
	if (n > vmm->nr_chunks)
		return -ENOMEM;
	/* Fail before moving anything when the shortfall is certain. */
	have = room_have(pg);
	/* Copies dropped make room in a bounded swap only (a walk). */
	if (have < n && !reclaimable(pg, n - have, 0) &&
	    (tp_swap_room(pg) == SIZE_MAX ||
	     !reclaimable(pg, n - have, swap_droppable(pg, SIZE_MAX, false))))
		ret = -ENOMEM;
	else
		ret = free_chunks(pg, n, NULL, whole);
	if (ret == -ENOMEM) {
		have = room_have(pg);
		/* Blame the swap only where its room is what fell short. */
		if (have < n && tp_swap_room_free(pg) < n - have &&
		    swap_short(pg, n - have))
			pg->c.swap_full++;
	}
	return ret;
}

int tp_pager_make_room(struct tp_pager *pg, size_t n)
{
	int ret;

	tp_pager_work_begin(pg);
	ret = make_room(pg, n, NULL);
	tp_pager_work_end(pg);
	return ret;
}

int tp_pager_make_room_for(struct tp_pager *pg, const struct tp_tensor *whole,
			   size_t n)
{
	int ret;

	tp_pager_work_begin(pg);
	ret = make_room(pg, n, whole);
	tp_pager_work_end(pg);
	return ret;
}

void tp_pager_watermark(struct tp_pager *pg)
{
	const struct tp_pager_conf *conf = &pg->conf;
	size_t budget = pg->vmm->nr_chunks, target;
	struct skipped s = { 0 };

	if (pg->victim.release_bytes) {
		uint64_t bytes = pg->victim.release_bytes(pg->victim.priv,
						tp_pager_used_bytes(pg),
						tp_pager_budget_bytes(pg));
		size_t n = (bytes + pg->chunk - 1) / pg->chunk;

		if (!n)
			return;
		target = n < pg->held ? pg->held - n : 0;
	} else {
		/* The same rule as the policy's hook (watermark.h). */
		uint64_t bytes = tp_watermark_release(&pg->wm,
						      conf->high_watermark,
						      conf->low_watermark,
						      pg->held * pg->chunk,
						      budget * pg->chunk);
		size_t n = (bytes + pg->chunk - 1) / pg->chunk;

		if (!n)
			return;
		target = n < pg->held ? pg->held - n : 0;
	}
	/* The range cache is free already: only tensors and slabs count. */
	while (pg->held > target) {
		if (tp_slab_shrink(pg))
			continue;
		if (send_victim(pg, pg->held - target, true, NULL, 0, &s))
			break;
	}
	unskip(pg, &s);
}

int tp_pager_make_room_ahead(struct tp_pager *pg, struct tp_tensor *t,
			     size_t n)
{
	int ret;

	/* @t itself is no victim while room is made for it. */
	t->pins++;
	tp_pager_cand_update(pg, t);
	tp_pager_work_begin(pg);
	ret = free_chunks(pg, n, t, NULL);
	tp_pager_work_end(pg);
	t->pins--;
	tp_pager_cand_update(pg, t);
	return ret;
}
