/* SPDX-License-Identifier: MIT */
/*
 * The pager's accounting: budget and use, time lost, the replay flag,
 * what may leave and how much room there is, the victim candidates, and
 * the events that order reuse after compute.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

void tp_pager_held_add(struct tp_pager *pg, long delta)
{
	pg->held += delta;
	if (pg->held > pg->c.held_peak)
		pg->c.held_peak = pg->held;
}

uint64_t tp_pager_budget_bytes(const struct tp_pager *pg)
{
	return (uint64_t)pg->vmm->nr_chunks * pg->chunk;
}

uint64_t tp_pager_used_bytes(const struct tp_pager *pg)
{
	return (uint64_t)pg->held * pg->chunk;
}

uint64_t tp_pager_access_seq(const struct tp_pager *pg)
{
	return pg->access_seq;
}

uint64_t tp_pager_lost_ns(const struct tp_pager *pg)
{
	return pg->c.stall_ns + pg->c.recompute_ns;
}

void tp_pager_reload_counts(const struct tp_pager *pg, uint64_t *reloads,
			    uint64_t *in_time)
{
	*reloads = pg->c.reloads;
	*in_time = pg->c.prefetch_hits;
}

uint64_t tp_pager_compute_ns(const struct tp_pager *pg)
{
	return pg->c.compute_ns;
}

uint64_t tp_pager_recompute_ns(const struct tp_pager *pg)
{
	return pg->c.recompute_ns;
}

void tp_pager_note_recompute(struct tp_pager *pg, uint64_t ns)
{
	pg->c.recomputes++;
	pg->c.recompute_ns += ns;
}

void tp_pager_note_compute(struct tp_pager *pg, uint64_t ns)
{
	pg->c.compute_ns += ns;
}

void tp_pager_replay_begin(struct tp_pager *pg)
{
	pg->replaying++;
}

void tp_pager_replay_end(struct tp_pager *pg)
{
	pg->replaying--;
}

bool tp_pager_replaying(const struct tp_pager *pg)
{
	return pg->replaying > 0;
}

bool tp_pager_can_offload(const struct tp_tensor *t)
{
	/* A scratch tensor's contents are not worth a copy. */
	return !t->slab &&
	       !(t->flags & (TP_OFFLOAD_PINNED | TP_NO_PAGING | TP_SCRATCH));
}

bool tp_pager_evictable(struct tp_pager *pg, const struct tp_tensor *t)
{
	if (t->slab || (t->flags & (TP_EVICT_PINNED | TP_NO_PAGING)))
		return false;
	/* Its pages are dropped and come back unwritten. */
	if (t->flags & TP_SCRATCH)
		return true;
	if (t->flags & TP_UNCOMPUTABLE)
		return false;
	return pg->regen.can_regenerate(pg->regen.priv, t);
}

bool tp_pager_can_evict(struct tp_pager *pg, const struct tp_tensor *t)
{
	return !t->rows_held && tp_pager_evictable(pg, t);
}

bool tp_pager_split_allowed(struct tp_pager *pg)
{
	return pg->victim.split && !tp_vmm_pool_contiguous(pg->vmm) &&
	       pg->victim.split(pg->victim.priv);
}

bool tp_pager_policy_swaps(const struct tp_pager *pg)
{
	return !pg->victim.swaps || pg->victim.swaps(pg->victim.priv);
}

void tp_pager_note_split(struct tp_pager *pg, unsigned parts)
{
	pg->c.split_runs++;
	pg->c.split_parts += parts;
}

void tp_pager_note_rows(struct tp_pager *pg)
{
	pg->c.rows_regenerated++;
}

size_t tp_pager_pinned_pages(const struct tp_tensor *t)
{
	if (t->slab)
		return 0;
#ifdef TP_DEBUG
	size_t n = 0;

	for (size_t i = 0; i < t->nr_pages; i++)
		n += t->pages[i].pins && t->pages[i].state == TP_PAGE_RESIDENT;
	if (n != t->pinned_pages) {
		fprintf(stderr, "tpager: tensor %llu: %zu pages pinned and resident, counted %zu\n",
			(unsigned long long)t->id, n, t->pinned_pages);
		abort();
	}
#endif
	return t->pinned_pages;
}

size_t tp_pager_room_pages(struct tp_pager *pg)
{
	size_t pinned = pg->pinned_resident;

#ifdef TP_DEBUG
	struct tp_tensor *t;
	size_t n = 0;

	cds_list_for_each_entry(t, &pg->tensors, link)
		n += tp_pager_pinned_pages(t);
	if (n != pinned) {
		fprintf(stderr, "tpager: %zu pages pinned and resident, counted %zu\n",
			n, pinned);
		abort();
	}
#endif
	/* Slab chunks in use never leave. */
	pinned += pg->slabs.chunks - pg->slabs.idle;
	return pinned < pg->vmm->nr_chunks ? pg->vmm->nr_chunks - pinned : 0;
}

bool tp_pager_fits_now(struct tp_pager *pg, size_t n)
{
	tp_vmm_reap(pg->vmm);
	return tp_vmm_chunks_fit(pg->vmm, n);
}

size_t tp_pager_span_pages(struct tp_pager *pg, size_t off, size_t len)
{
	if (!len)
		return 0;
	return (off + len - 1) / pg->chunk - off / pg->chunk + 1;
}

size_t tp_pager_pages_for(const struct tp_pager *pg, size_t bytes)
{
	if (!bytes || tp_slab_fits(pg, bytes))
		return 0;
	return (bytes - 1) / pg->chunk + 1;
}

/*
 * A fake-deleted tensor whose memory is all gone keeps no virtual range:
 * its address no longer matters (the user freed it), and on the host
 * backend every range is a kernel mapping, of which a long chain of
 * fake-deleted tensors would exhaust vm.max_map_count. A regeneration
 * reserves one again (tp_pager_rereserve). The vmm defers the release
 * behind pending unmaps.
 */
static void drop_range(struct tp_pager *pg, struct tp_tensor *t)
{
	if (!t->dead || t->unreserved || t->slab || t->pins ||
	    t->inflight_pages || !t->refs || t->evicted_pages != t->nr_pages)
		return;
	if (tp_vmm_release(pg->vmm, t->va, t->nr_pages * pg->chunk))
		return;		/* kept; tried again at the next change */
	t->unreserved = true;
	/* What is left mapped there goes with the range. */
	for (size_t i = 0; i < t->nr_pages; i++)
		t->pages[i].left_mapped = false;
}

int tp_pager_rereserve(struct tp_pager *pg, struct tp_tensor *t)
{
	int ret;

	if (!t->unreserved)
		return 0;
	ret = tp_vmm_reserve(pg->vmm, t->nr_pages * pg->chunk, &t->va);
	if (ret)
		return ret;
	t->unreserved = false;
	/* A moved tensor coming back elsewhere: its old range is free
	 * memory (a link kept would outlive the state it describes). */
	tp_range_cache_forget(t);
	/* A live tensor moved out of its range is found at its new one. */
	if (!t->dead)
		tp_lookup_add_tensor(pg, t);
	return 0;
}

void tp_pager_cand_update(struct tp_pager *pg, struct tp_tensor *t)
{
	bool want = !t->slab && !t->pins && t->resident_pages &&
		    !t->inflight_pages && t->refs &&
		    !(t->flags & TP_NO_PAGING);

	if (t->dead && !t->resident_pages)
		drop_range(pg, t);
	if (want == t->candidate)
		return;
	if (want) {
		t->candidate = true;
		cds_list_add_tail(&t->cand, &pg->cands);
		pg->victim.add(pg->victim.priv, t);
	} else {
		tp_pager_cand_drop(pg, t);
	}
}

void tp_pager_cand_drop(struct tp_pager *pg, struct tp_tensor *t)
{
	if (!t->candidate)
		return;
	t->candidate = false;
	cds_list_del(&t->cand);
	pg->victim.del(pg->victim.priv, t);
}

struct tp_event *tp_pager_compute_event(struct tp_pager *pg)
{
	struct tp_event *ev = tp_vmm_event_create(pg->vmm);
	int ret;

	if (!ev)
		return NULL;
	ret = tp_vmm_event_record(pg->vmm, ev, TP_STREAM_COMPUTE);
	if (ret) {
		tp_vmm_event_put(pg->vmm, ev);
		errno = -ret;
		return NULL;
	}
	return ev;
}

/*
 * An event after all the compute work issued so far: the last one
 * recorded while no work was issued since, else a new one. A release
 * after an op takes it; the op's tensors share it.
 */
static struct tp_event *use_event(struct tp_pager *pg)
{
	struct tp_event *ev;

	if (pg->use_ev && !pg->use_stale &&
	    pg->use_work == pg->vmm->compute_work)
		return tp_vmm_event_get(pg->use_ev);
	ev = tp_pager_compute_event(pg);
	if (!ev)
		return NULL;
	if (pg->use_ev)
		tp_vmm_event_put(pg->vmm, pg->use_ev);
	pg->use_ev = tp_vmm_event_get(ev);
	pg->use_work = pg->vmm->compute_work;
	pg->use_stale = false;
	return ev;
}

void tp_pager_note_use(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *ev;

	if (!pg->vmm->ordered_reuse || t->slab)
		return;
	ev = use_event(pg);
	/* Without it the pages leave behind an event recorded then. */
	if (t->last_use)
		tp_vmm_event_put(pg->vmm, t->last_use);
	t->last_use = ev;
}

void tp_pager_touch(struct tp_pager *pg, struct tp_tensor *t)
{
	t->last_access_ns = tp_vmm_now_ns(pg->vmm);
	t->access_seq = ++pg->access_seq;
}

void tp_pager_user_work(struct tp_pager *pg)
{
	pg->use_stale = true;
}

struct tp_event *tp_pager_leave_fence(struct tp_pager *pg,
				      struct tp_tensor *t)
{
	if (pg->vmm->ordered_reuse && t->last_use)
		return tp_vmm_event_get(t->last_use);
	return tp_pager_compute_event(pg);
}
