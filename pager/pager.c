/* SPDX-License-Identifier: MIT */
/*
 * The pager: its creation, the life of a tensor (references, fake
 * deletion, teardown), candidates for the victim ops, and the polling of
 * copies in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctx/ctx.h"
#include "ctx/log.h"
#include "pager/pager_int.h"

static void poll_copies(struct tp_pager *pg, bool all);

/* --- regeneration defaults: nothing can be regenerated ---------------- */

static bool no_regen_can(void *priv, const struct tp_tensor *t)
{
	return false;
}

static int no_regen(void *priv, struct tp_tensor *t)
{
	return -TP_ENOREGEN;
}

static bool no_regen_on_free(void *priv, struct tp_tensor *t)
{
	return false;
}

static const struct tp_regen_ops no_regen_ops = {
	.can_regenerate = no_regen_can,
	.regenerate = no_regen,
	.on_free = no_regen_on_free,
};

/* --- creation ---------------------------------------------------------- */

struct tp_pager *tp_pager_create(struct tp_ctx *ctx)
{
	const struct tp_conf *conf = &ctx->conf;
	struct tp_vmm *vmm = ctx->vmm;
	struct tp_pager *pg;
	uint64_t budget;
	int ret;

	pg = calloc(1, sizeof(*pg));
	if (!pg) {
		errno = ENOMEM;
		return NULL;
	}
	pg->ctx = ctx;
	pg->vmm = vmm;
	pg->chunk = vmm->granularity;
	pg->next_id = 1;
	CDS_INIT_LIST_HEAD(&pg->tensors);
	CDS_INIT_LIST_HEAD(&pg->inflight);
	CDS_INIT_LIST_HEAD(&pg->cands);
	CDS_INIT_LIST_HEAD(&pg->lru);
	CDS_INIT_LIST_HEAD(&pg->cache.ranges);
	for (size_t i = 0; i < TP_RANGE_BUCKETS; i++)
		CDS_INIT_LIST_HEAD(&pg->cache.by_size[i]);
	/*
	 * On a backend where the device is the host's own memory and has no
	 * stream handle for kernels, the caller touches acquired memory from
	 * its own thread: acquire must wait for the copies there.
	 */
	pg->host_waits = tp_vmm_has_data(vmm) &&
			 !tp_vmm_stream_handle(vmm, TP_STREAM_COMPUTE);
	pg->swap_cache = conf->pager_swap_cache;

	budget = tp_psize_bytes(&conf->pager_budget, vmm->device_bytes);
	if (budget < pg->chunk) {
		tp_ctx_error(ctx, -EINVAL, "pager.budget %llu is less than one chunk (%zu)",
			     (unsigned long long)budget, pg->chunk);
		ret = -EINVAL;
		goto err_free;
	}
	ret = tp_vmm_pool_create(vmm, budget);
	if (ret) {
		tp_ctx_error(ctx, ret, "cannot create the chunk pool");
		goto err_free;
	}
	if (conf->vmm_mode == TP_VMM_MODE_CONTIGUOUS) {
		ret = tp_vmm_pool_set_contiguous(vmm);
		if (ret) {
			tp_ctx_error(ctx, ret, "vmm.mode = contiguous: not on the %s backend",
				     vmm->ops->name);
			goto err_free;
		}
	}
	ret = tp_swap_init(pg, conf->pager_host_budget);
	if (ret)
		goto err_free;
	tp_slab_init(pg, conf->pager_slab_fraction);
	ret = tp_lookup_init(pg);
	if (ret)
		goto err_swap;
	tp_victim_lru_init(pg, &pg->victim);
	pg->regen = no_regen_ops;
	return pg;

err_swap:
	tp_swap_fini(pg);
err_free:
	free(pg);
	errno = -ret;
	return NULL;
}

void tp_pager_destroy(struct tp_pager *pg)
{
	struct tp_tensor *t, *tmp;

	if (!pg)
		return;
	tp_vmm_sync_all(pg->vmm);
	tp_pager_poll(pg);
	/* Everything left is freed, whoever held it. */
	cds_list_for_each_entry_safe(t, tmp, &pg->tensors, link) {
		t->pins = 0;
		if (t->pages)
			for (size_t i = 0; i < t->nr_pages; i++)
				t->pages[i].pins = 0;
		t->refs = 1;
		tp_pager_tensor_put(pg, t);
	}
	tp_range_cache_fini(pg);
	tp_slab_fini(pg);
	tp_vmm_sync_all(pg->vmm);
	poll_copies(pg, true);
	free(pg->copies);
	free(pg->run_buf);
	if (pg->use_ev)
		tp_vmm_event_put(pg->vmm, pg->use_ev);
	tp_swap_fini(pg);
	tp_lookup_fini(pg);
	free(pg);
}

void tp_pager_set_victim_ops(struct tp_pager *pg, const struct tp_victim_ops *ops)
{
	struct tp_tensor *t;

	/* Hand the candidates over: the old ops forget them, the new learn. */
	cds_list_for_each_entry(t, &pg->cands, cand)
		pg->victim.del(pg->victim.priv, t);
	if (ops)
		pg->victim = *ops;
	else
		tp_victim_lru_init(pg, &pg->victim);
	cds_list_for_each_entry(t, &pg->cands, cand)
		pg->victim.add(pg->victim.priv, t);
}

void tp_pager_set_regen_ops(struct tp_pager *pg, const struct tp_regen_ops *ops)
{
	pg->regen = ops ? *ops : no_regen_ops;
}

/* --- accounting -------------------------------------------------------- */

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

bool tp_pager_can_evict(struct tp_pager *pg, const struct tp_tensor *t)
{
	if (t->slab || (tp_pager_leave_flags(t) & (TP_EVICT_PINNED |
						    TP_NO_PAGING)))
		return false;
	/* Its pages are dropped and come back unwritten. */
	if (t->flags & TP_SCRATCH)
		return true;
	if (t->flags & TP_UNCOMPUTABLE)
		return false;
	return pg->regen.can_regenerate(pg->regen.priv, t);
}

bool tp_pager_split_allowed(struct tp_pager *pg)
{
	return pg->victim.split && !tp_vmm_pool_contiguous(pg->vmm) &&
	       pg->victim.split(pg->victim.priv);
}

void tp_pager_note_split(struct tp_pager *pg, unsigned parts)
{
	pg->c.split_runs++;
	pg->c.split_parts += parts;
}

size_t tp_pager_pinned_pages(const struct tp_tensor *t)
{
	size_t n = 0;

	if (!t->pins || t->slab)
		return 0;
	for (size_t i = 0; i < t->nr_pages; i++)
		n += t->pages[i].pins && t->pages[i].state == TP_PAGE_RESIDENT;
	return n;
}

size_t tp_pager_room_pages(struct tp_pager *pg)
{
	size_t pinned = 0;
	struct tp_tensor *t;

	cds_list_for_each_entry(t, &pg->tensors, link)
		pinned += tp_pager_pinned_pages(t);
	/* Slab chunks in use never leave. */
	pinned += pg->slabs.chunks - pg->slabs.idle;
	return pinned < pg->vmm->nr_chunks ? pg->vmm->nr_chunks - pinned : 0;
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

bool tp_pager_has_evicted(const struct tp_tensor *t)
{
	return t->evicted_pages > 0;
}

bool tp_pager_is_resident(const struct tp_tensor *t)
{
	return t->resident_pages == t->nr_pages;
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
}

int tp_pager_rereserve(struct tp_pager *pg, struct tp_tensor *t)
{
	int ret;

	if (!t->unreserved)
		return 0;
	ret = tp_vmm_reserve(pg->vmm, t->nr_pages * pg->chunk, &t->va);
	if (!ret)
		t->unreserved = false;
	return ret;
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

/* --- copies in flight -------------------------------------------------- */

void tp_pager_inflight_add(struct tp_pager *pg, struct tp_tensor *t)
{
	if (t->on_inflight)
		return;
	t->on_inflight = true;
	cds_list_add_tail(&t->inflight, &pg->inflight);
}

/* Complete page @p, whose copy has finished. */
static void page_complete(struct tp_pager *pg, struct tp_tensor *t,
			  struct tp_page *p)
{
	if (p->state == TP_PAGE_OFFLOADING) {
		/* The vmm returns the chunk through its deferred unmap. */
		p->chunk = NULL;
		tp_page_set(t, p, TP_PAGE_OFFLOADED);
	} else if (p->state == TP_PAGE_RELOADING) {
		void *buf = p->swap;

		p->swap = NULL;
		tp_page_set(t, p, TP_PAGE_RESIDENT);
		/* The copy is complete: nothing uses the buffer now. */
		tp_pager_reloaded_buffer(pg, t, p, buf, NULL);
	}
	tp_vmm_event_put(pg->vmm, p->ev);
	p->ev = NULL;
}

/* --- the swap cache ---------------------------------------------------- */

void tp_pager_cache_page(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_page *p, void *buf, struct tp_event *ev)
{
	p->swap = buf;
	p->ev = ev ? tp_vmm_event_get(ev) : NULL;
	t->cached_pages++;
	pg->swap.cached++;
}

void tp_pager_reloaded_buffer(struct tp_pager *pg, struct tp_tensor *t,
			      struct tp_page *p, void *buf,
			      struct tp_event *ev)
{
	if (pg->swap_cache)
		tp_pager_cache_page(pg, t, p, buf, ev);
	else if (ev)
		tp_swap_put_after(pg, buf, ev);
	else
		tp_swap_put(pg, &buf, 1);
}

static void uncache_page(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_page *p)
{
	if (p->state != TP_PAGE_RESIDENT || !p->swap)
		return;
	if (p->ev) {
		tp_swap_put_after(pg, p->swap, p->ev);
		tp_vmm_event_put(pg->vmm, p->ev);
		p->ev = NULL;
	} else {
		tp_swap_put(pg, &p->swap, 1);
	}
	p->swap = NULL;
	t->cached_pages--;
	pg->swap.cached--;
}

void tp_pager_cache_settle(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *done = NULL;

	for (size_t i = 0; i < t->nr_pages && t->cached_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_RESIDENT || !p->swap || !p->ev ||
		    p->ev == done)
			continue;
		if (tp_vmm_event_sync(pg->vmm, p->ev)) {
			tp_vmm_sync_all(pg->vmm);
			return;
		}
		done = p->ev;
	}
}

void tp_pager_uncache(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		      size_t last)
{
	for (size_t i = first; i <= last && t->cached_pages; i++)
		uncache_page(pg, t, &t->pages[i]);
}

size_t tp_pager_cache_shrink(struct tp_pager *pg, size_t want,
			     const struct tp_tensor *keep)
{
	struct tp_tensor *t;
	size_t n = 0;

	/* Oldest tensors first: the swap is full, which is rare. */
	cds_list_for_each_entry(t, &pg->tensors, link) {
		if (n >= want || !pg->swap.cached)
			break;
		if (t == keep || !t->cached_pages)
			continue;
		n += t->cached_pages;
		tp_pager_uncache(pg, t, 0, t->nr_pages - 1);
	}
	return n;
}

void tp_pager_inflight_done(struct tp_pager *pg, struct tp_tensor *t)
{
	if (t->inflight_pages || !t->on_inflight)
		return;
	t->on_inflight = false;
	cds_list_del(&t->inflight);
	if (t->pol_prefetch)
		tp_pager_prefetch_answer(pg, t, true);
	tp_pager_cand_update(pg, t);
}

/* Poll one tensor; pages of one copy share an event, queried once. */
static void poll_tensor(struct tp_pager *pg, struct tp_tensor *t, bool wait)
{
	struct tp_event *done = NULL;

	for (size_t i = 0; i < t->nr_pages && t->inflight_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (!p->ev || (p->state != TP_PAGE_OFFLOADING &&
			       p->state != TP_PAGE_RELOADING))
			continue;
		if (p->ev != done) {
			int ret = wait ? tp_vmm_event_sync(pg->vmm, p->ev) :
					 tp_vmm_event_query(pg->vmm, p->ev);
			if (ret)
				continue;
			done = p->ev;
		}
		page_complete(pg, t, p);
	}
	tp_pager_inflight_done(pg, t);
}

int tp_pager_copy_event(struct tp_pager *pg, enum tp_stream s,
			struct tp_event **ev)
{
	int ret;

	*ev = tp_vmm_event_create_timed(pg->vmm);
	if (!*ev)
		return -errno;
	ret = tp_vmm_event_record(pg->vmm, *ev, s);
	if (ret) {
		tp_vmm_event_put(pg->vmm, *ev);
		*ev = NULL;
	}
	return ret;
}

struct tp_event *tp_pager_copy_start(struct tp_pager *pg, enum tp_stream s)
{
	struct tp_event *ev;

	/* Only a measurement is lost without it. */
	return tp_pager_copy_event(pg, s, &ev) ? NULL : ev;
}

uint64_t tp_pager_copy_backlog(const struct tp_pager *pg, bool d2h)
{
	return pg->copy_bytes[d2h];
}

void tp_pager_copy_issued(struct tp_pager *pg, struct tp_event *start,
			  struct tp_event *ev, uint64_t t0, uint64_t bytes,
			  bool d2h)
{
	if (pg->nr_copies == pg->cap_copies) {
		size_t cap = pg->cap_copies ? 2 * pg->cap_copies : 32;
		struct tp_copy_rec *r = realloc(pg->copies, cap * sizeof(*r));

		if (!r) {
			/* only a measurement is lost */
			if (start)
				tp_vmm_event_put(pg->vmm, start);
			return;
		}
		pg->copies = r;
		pg->cap_copies = cap;
	}
	pg->copies[pg->nr_copies++] = (struct tp_copy_rec){
		.start = start, .ev = tp_vmm_event_get(ev), .t0 = t0,
		.bytes = bytes, .d2h = d2h,
	};
	pg->copy_bytes[d2h] += bytes;
	/* Counted only: the decision that started it was charged and
	 * checked. */
	(void)tp_pager_work(pg, 1, false);
}

/*
 * Account the timed copies that completed: time on the link, bandwidth.
 * A batch is timed from when its stream started it (its start event:
 * after the work before it on the stream and what it waited on) to its
 * completion, not from its issue, which would count the time it queued
 * behind compute. Without a start event, from issue to now.
 */
static void poll_copies(struct tp_pager *pg, bool all)
{
	uint64_t now = tp_vmm_now_ns(pg->vmm);
	size_t j = 0;

	for (size_t i = 0; i < pg->nr_copies; i++) {
		struct tp_copy_rec *r = &pg->copies[i];
		uint64_t ns = now - r->t0, el;

		if (!all && tp_vmm_event_query(pg->vmm, r->ev) == -EAGAIN) {
			pg->copies[j++] = *r;
			continue;
		}
		if (r->start) {
			if (!tp_vmm_event_elapsed_ns(pg->vmm, r->start, r->ev,
						     &el))
				ns = el;
			tp_vmm_event_put(pg->vmm, r->start);
		}
		if (r->d2h)
			pg->c.copy_d2h_ns += ns;
		else
			pg->c.copy_h2d_ns += ns;
		if (pg->victim.copy_done)
			pg->victim.copy_done(pg->victim.priv, r->d2h, r->bytes, ns);
		pg->copy_bytes[r->d2h] -= r->bytes;
		tp_vmm_event_put(pg->vmm, r->ev);
	}
	pg->nr_copies = j;
}

void tp_pager_poll(struct tp_pager *pg)
{
	struct tp_tensor *t, *tmp;

	if (pg->nr_copies)
		poll_copies(pg, false);
	cds_list_for_each_entry_safe(t, tmp, &pg->inflight, inflight)
		poll_tensor(pg, t, false);
	tp_swap_reap(pg, false);
	tp_vmm_reap(pg->vmm);
}

void tp_pager_sync(struct tp_pager *pg)
{
	tp_pager_poll(pg);
}

int tp_pager_settle(struct tp_pager *pg, struct tp_tensor *t, size_t first,
		    size_t last)
{
	int ret;

	for (size_t i = first; i <= last && t->inflight_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_OFFLOADING &&
		    p->state != TP_PAGE_RELOADING)
			continue;
		ret = tp_vmm_event_sync(pg->vmm, p->ev);
		if (ret)
			return ret;
		page_complete(pg, t, p);
	}
	tp_pager_inflight_done(pg, t);
	return 0;
}

/* --- unmapping --------------------------------------------------------- */

int tp_pager_unmap_pages(struct tp_pager *pg, struct tp_tensor *t,
			 struct tp_event *ev, bool evict, size_t most)
{
	return tp_pager_unmap_range(pg, t, 0, t->nr_pages - 1, ev,
				    evict ? TP_UNMAP_DROP : TP_UNMAP_TEARDOWN,
				    most);
}

int tp_pager_unmap_range(struct tp_pager *pg, struct tp_tensor *t,
			 size_t first, size_t last, struct tp_event *ev,
			 enum tp_unmap_how how, size_t most)
{
	struct tp_chunk **run;
	size_t i = first;
	int ret;

	tp_pager_cache_settle(pg, t);
	while (i <= last && most) {
		size_t start = i, n = 0;

		/* Whole handles, each wholly inside and free to go: a run
		 * may take more pages than @most, never part of a handle. */
		while (i <= last && n < most &&
		       tp_pager_handle_can_go(pg, t, i, first, last)) {
			size_t end = tp_pager_handle_end(pg, t, i);

			n += end - i;
			i = end;
		}
		if (!n) {
			i++;
			continue;
		}
		run = tp_pager_run_chunks(pg, t, start, n);
		if (!run)
			return -ENOMEM;
		ret = tp_vmm_unmap_after(pg->vmm, t->va + start * pg->chunk,
					 run, n, ev);
		if (ret)
			return ret;
		for (size_t j = start; j < start + n; j++) {
			/* Evicted or torn down: its copy goes with it. */
			uncache_page(pg, t, &t->pages[j]);
			t->pages[j].chunk = NULL;
			t->pages[j].left_mapped = how == TP_UNMAP_EVICT;
			if (how != TP_UNMAP_TEARDOWN)
				tp_page_set(t, &t->pages[j], TP_PAGE_EVICTED);
			else
				t->resident_pages--;
		}
		tp_pager_held_add(pg, -(long)n);
		most -= n < most ? n : most;
	}
	return 0;
}

/* --- tensors ----------------------------------------------------------- */

static struct tp_lnodes *lnodes_new(struct tp_tensor *t, size_t n)
{
	struct tp_lnodes *lk;

	lk = calloc(1, sizeof(*lk) + n * sizeof(lk->node[0]));
	if (!lk)
		return NULL;
	lk->t = t;
	lk->n = n;
	for (size_t i = 0; i < n; i++)
		lk->node[i].t = t;
	return lk;
}

struct tp_tensor *tp_pager_tensor_new(struct tp_pager *pg, size_t bytes,
				      unsigned flags)
{
	struct tp_tensor *t;
	int ret = -ENOMEM;

	if (!bytes) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto err;
	t->bytes = bytes;
	t->flags = flags;
	t->refs = 1;
	t->pol.idx = -1;
	CDS_INIT_LIST_HEAD(&t->lru);
	tp_pager_poll(pg);

	if (tp_slab_fits(pg, bytes)) {
		t->lk = lnodes_new(t, 0);
		if (!t->lk)
			goto err_free;
		ret = tp_slab_alloc(pg, t);
		if (ret)
			goto err_free;
	} else {
		t->nr_pages = tp_vmm_chunks_for(pg->vmm, bytes);
		t->pages = calloc(t->nr_pages, sizeof(*t->pages));
		t->lk = lnodes_new(t, tp_lookup_nodes(pg, t->nr_pages));
		if (!t->pages || !t->lk)
			goto err_free;
		if (tp_range_cache_get(pg, t)) {
			pg->c.cache_hits++;
		} else {
			pg->c.cache_misses++;
			ret = tp_vmm_reserve(pg->vmm, t->nr_pages * pg->chunk,
					     &t->va);
			if (ret)
				goto err_free;
		}
		tp_lookup_add_tensor(pg, t);
	}
	t->id = pg->next_id++;
	t->last_access_ns = tp_vmm_now_ns(pg->vmm);
	t->access_seq = pg->access_seq;
	cds_list_add_tail(&t->link, &pg->tensors);
	pg->tensors_live++;
	tp_pager_cand_update(pg, t);
	return t;

err_free:
	free(t->pages);
	free(t->lk);
	free(t);
err:
	errno = -ret;
	return NULL;
}

void tp_pager_tensor_get(struct tp_tensor *t)
{
	t->refs++;
}

static void tensor_free_rcu(struct rcu_head *head)
{
	struct tp_lnodes *lk = caa_container_of(head, struct tp_lnodes, rcu);
	struct tp_tensor *t = lk->t;

	free(t->pages);
	free(t);
	free(lk);
}

/*
 * Pages of @t whose offload is in flight, left in state @to: the vmm
 * already returns their chunks after the copy (deferred unmap), and their
 * swap buffers come back after it too. Nothing waits.
 */
static void drop_offloading(struct tp_pager *pg, struct tp_tensor *t,
			    enum tp_page_state to)
{
	for (size_t i = 0; i < t->nr_pages && t->inflight_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_OFFLOADING)
			continue;
		p->chunk = NULL;
		tp_page_set(t, p, to);
		tp_swap_put_after(pg, p->swap, p->ev);
		p->swap = NULL;
		tp_vmm_event_put(pg->vmm, p->ev);
		p->ev = NULL;
	}
}

/*
 * Give back everything @t holds. Offloads in flight are not waited for,
 * nor is the range's release (the vmm defers it behind the unmaps);
 * reloads in flight are (their chunks are being written).
 */
static void tensor_teardown(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *ev;
	int ret = 0;

	if (t->slab) {
		tp_slab_free(pg, t);
		return;
	}
	drop_offloading(pg, t, TP_PAGE_OFFLOADED);
	tp_pager_cache_settle(pg, t);
	tp_pager_uncache(pg, t, 0, t->nr_pages - 1);
	if (t->inflight_pages)
		ret = tp_pager_settle(pg, t, 0, t->nr_pages - 1);
	if (ret) {
		/* The copies cannot be observed: wait for the whole device. */
		tp_vmm_sync_all(pg->vmm);
		tp_pager_poll(pg);
	}
	if (tp_range_cache_put(pg, t))
		return;
	ev = tp_pager_leave_fence(pg, t);
	ret = tp_pager_unmap_pages(pg, t, ev, false, SIZE_MAX);
	if (ret || !ev) {
		/* Fall back to unmapping at once after the device is idle. */
		tp_vmm_sync_all(pg->vmm);
		for (size_t i = 0; i < t->nr_pages;) {
			struct tp_page *p = &t->pages[i];
			struct tp_chunk **run;
			size_t end;

			if (!p->chunk || p->state != TP_PAGE_RESIDENT) {
				i++;
				continue;
			}
			end = tp_pager_handle_end(pg, t, i);
			run = tp_pager_run_chunks(pg, t, i, end - i);
			if (run && !tp_vmm_unmap(pg->vmm, t->va + i * pg->chunk,
						 run, end - i))
				tp_vmm_chunks_put(pg->vmm, run, end - i);
			tp_pager_held_add(pg, -(long)(end - i));
			for (; i < end; i++)
				t->pages[i].chunk = NULL;
		}
	}
	if (ev)
		tp_vmm_event_put(pg->vmm, ev);
	for (size_t i = 0; i < t->nr_pages; i++) {
		if (t->pages[i].swap) {
			tp_swap_put(pg, &t->pages[i].swap, 1);
			t->pages[i].swap = NULL;
		}
	}
	/* Deferred by the vmm while unmaps over the range are pending. */
	if (t->unreserved)
		return;
	ret = tp_vmm_release(pg->vmm, t->va, t->nr_pages * pg->chunk);
	if (ret)
		tp_log(TP_LOG_ERROR, "pager: releasing tensor %llu's range: %s",
		       (unsigned long long)t->id, tp_strerror(ret));
}

void tp_pager_tensor_put(struct tp_pager *pg, struct tp_tensor *t)
{
	if (--t->refs)
		return;
	tp_pager_cand_update(pg, t);
	if (!t->dead)
		tp_lookup_del_tensor(pg, t);
	if (t->pol_prefetch)
		tp_pager_prefetch_answer(pg, t, false);
	if (pg->victim.forget)
		pg->victim.forget(pg->victim.priv, t);
	tensor_teardown(pg, t);
	if (t->last_use) {
		tp_vmm_event_put(pg->vmm, t->last_use);
		t->last_use = NULL;
	}
	if (t->on_inflight)
		cds_list_del(&t->inflight);
	cds_list_del(&t->link);
	pg->tensors_live--;
	call_rcu(&t->lk->rcu, tensor_free_rcu);
}

bool tp_pager_is_freed(const struct tp_tensor *t)
{
	return t->dead;
}

bool tp_pager_in_slab(const struct tp_tensor *t)
{
	return t->slab;
}

int tp_pager_tensor_free(struct tp_pager *pg, struct tp_tensor *t)
{
	bool keep;

	if (t->dead)
		return -EINVAL;
	if (t->pins)
		return -EBUSY;
	tp_lookup_del_tensor(pg, t);
	t->dead = true;
	/*
	 * Lineage hears of every free, slab tensors included. A slab tensor
	 * is never fake-deleted (it cannot be evicted): while records hold
	 * it, their references keep its memory.
	 */
	keep = pg->regen.on_free(pg->regen.priv, t);
	if (keep && !t->slab) {
		/* Fake deletion: the memory goes, lineage keeps the record. */
		tp_pager_drop_contents(pg, t);
	}
	tp_pager_tensor_put(pg, t);
	return 0;
}

/* --- identities -------------------------------------------------------- */

int tp_pager_swap_identity(struct tp_pager *pg, struct tp_tensor *a,
			   struct tp_tensor *b)
{
	int ret;

	if (a == b || a->slab || b->slab || a->nr_pages != b->nr_pages)
		return -EINVAL;
	if (a->pins || b->pins)
		return -EBUSY;
	ret = tp_pager_settle(pg, a, 0, a->nr_pages - 1);
	if (!ret)
		ret = tp_pager_settle(pg, b, 0, b->nr_pages - 1);
	if (ret)
		return ret;
	tp_pager_cand_drop(pg, a);
	tp_pager_cand_drop(pg, b);
#define SWAP(x, y) do { __typeof__(x) _s = (x); (x) = (y); (y) = _s; } while (0)
	SWAP(a->va, b->va);
	SWAP(a->pages, b->pages);
	SWAP(a->resident_pages, b->resident_pages);
	SWAP(a->cached_pages, b->cached_pages);
	SWAP(a->evicted_pages, b->evicted_pages);
	SWAP(a->inflight_pages, b->inflight_pages);
	SWAP(a->last_use, b->last_use);
	SWAP(a->lk, b->lk);
#undef SWAP
	/* Each node array keeps its keys (addresses) and changes owner. */
	a->lk->t = a;
	b->lk->t = b;
	for (size_t i = 0; i < a->lk->n; i++)
		rcu_assign_pointer(a->lk->node[i].t, a);
	for (size_t i = 0; i < b->lk->n; i++)
		rcu_assign_pointer(b->lk->node[i].t, b);
	tp_pager_cand_update(pg, a);
	tp_pager_cand_update(pg, b);
	return 0;
}

int tp_pager_drop_contents(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_event *ev;
	int ret;

	if (t->slab)
		return -EPERM;
	if (t->pins)
		return -EBUSY;
	/* A copy out no one will read: not waited for. */
	drop_offloading(pg, t, TP_PAGE_EVICTED);
	tp_pager_inflight_done(pg, t);
	ret = tp_pager_settle(pg, t, 0, t->nr_pages - 1);
	if (ret)
		return ret;
	/* Training frees the same sizes every step: a freed tensor's
	 * range serves the next one of its size without a driver call. */
	if (tp_range_cache_put_dead(pg, t)) {
		tp_pager_cand_update(pg, t);
		return 0;
	}
	ev = tp_pager_leave_fence(pg, t);
	if (!ev)
		return -errno;
	ret = tp_pager_unmap_pages(pg, t, ev, true, SIZE_MAX);
	tp_vmm_event_put(pg->vmm, ev);
	if (ret)
		return ret;
	for (size_t i = 0; i < t->nr_pages; i++) {
		struct tp_page *p = &t->pages[i];

		/* Nothing to drop: marked so that acquire regenerates it
		 * rather than hand out a fresh chunk. */
		if (p->state == TP_PAGE_UNBACKED)
			tp_page_set(t, p, TP_PAGE_EVICTED);
	}
	tp_pager_drop_swapped(pg, t, 0, t->nr_pages - 1);
	tp_pager_cand_update(pg, t);
	return 0;
}

void tp_pager_drop_swapped(struct tp_pager *pg, struct tp_tensor *t,
			   size_t first, size_t last)
{
	for (size_t i = first; i <= last; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_OFFLOADED)
			continue;
		tp_swap_put(pg, &p->swap, 1);
		p->swap = NULL;
		tp_page_set(t, p, TP_PAGE_EVICTED);
	}
}

/* --- statistics -------------------------------------------------------- */

void tp_pager_stats(struct tp_pager *pg, struct tp_stats *st)
{
	const struct tp_vmm_stats *vs = &pg->vmm->stats;
	static const enum tp_vmm_call driver[] = {
		TP_CALL_RESERVE, TP_CALL_RELEASE, TP_CALL_CHUNK_CREATE,
		TP_CALL_CHUNK_DESTROY, TP_CALL_MAP, TP_CALL_SET_ACCESS,
		TP_CALL_UNMAP,
	};

	tp_pager_poll(pg);
	st->chunk_size = pg->chunk;
	st->budget_bytes = tp_pager_budget_bytes(pg);
	st->chunks_mapped = vs->chunks_mapped;
	st->chunks_peak = vs->chunks_peak;
	st->phys_bytes = vs->chunks_mapped * pg->chunk;
	st->phys_peak = vs->chunks_peak * pg->chunk;
	st->ranges_reserved = vs->ranges_reserved;
	st->tensors_live = pg->tensors_live;
	st->host_bytes = (uint64_t)pg->swap.used * pg->chunk;
	st->host_peak = (uint64_t)pg->swap.peak * pg->chunk;
	st->host_budget = pg->swap.max == SIZE_MAX ? 0 :
			  (uint64_t)pg->swap.max * pg->chunk;
	st->offloads = pg->c.offloads;
	st->reloads = pg->c.reloads;
	st->evictions = pg->c.evictions;
	st->partial_evictions = pg->c.partial_evictions;
	st->split_runs = pg->c.split_runs;
	st->split_parts = pg->c.split_parts;
	st->recomputes = pg->c.recomputes;
	st->recompute_ns = pg->c.recompute_ns;
	st->prefetch_issued = pg->c.prefetch_issued;
	st->prefetch_hits = pg->c.prefetch_hits;
	st->prefetch_late = pg->c.prefetch_late;
	st->prefetch_wasted = pg->c.prefetch_wasted;
	st->host_cached_bytes = (uint64_t)pg->swap.cached * pg->chunk;
	st->writebacks = pg->c.writebacks;
	st->cache_offloads = pg->c.cache_offloads;
	st->bytes_d2h = pg->c.bytes_d2h;
	st->bytes_h2d = pg->c.bytes_h2d;
	st->stall_ns = pg->c.stall_ns;
	st->compute_ns = pg->c.compute_ns;
	st->range_cache_hits = pg->c.cache_hits;
	st->range_cache_misses = pg->c.cache_misses;
	st->driver_calls = 0;
	st->driver_ns = 0;
	for (size_t i = 0; i < sizeof(driver) / sizeof(driver[0]); i++) {
		st->driver_calls += vs->call[driver[i]].calls;
		st->driver_ns += vs->call[driver[i]].ns;
	}
	/* Copy time runs from when the stream started a batch to its
	 * completion (poll_copies). */
	st->copy_d2h_ns = pg->c.copy_d2h_ns;
	st->copy_h2d_ns = pg->c.copy_h2d_ns;
	st->fragmentation_ppm = tp_vmm_frag_ppm(pg->vmm);
	st->handles = vs->handles;
	st->handle_creates = vs->handles_created;
	st->recarves = vs->handles_released;
	st->rescued_pages = pg->c.rescued_pages;
	st->driver_bg_calls = vs->bg_calls;
	st->driver_bg_ns = vs->bg_ns;
	st->swap_full = pg->c.swap_full;
}
