/* SPDX-License-Identifier: MIT */
/*
 * The life of a tensor: creation, references, fake deletion, teardown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

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
		t->pinned_sum = &pg->pinned_resident;
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
	free(t->runs);
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

	free(t->runs);
	free(t->pages);
	free(t);
	free(lk);
}

/*
 * Pages of @t whose offload is in flight, left in state @to: the vmm
 * already returns their chunks after the copy (deferred unmap), and their
 * swap buffers come back after it too. Nothing waits.
 */
void tp_pager_drop_offloading(struct tp_pager *pg, struct tp_tensor *t,
			    enum tp_page_state to)
{
	for (size_t i = 0; i < t->nr_pages && t->inflight_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (p->state != TP_PAGE_OFFLOADING)
			continue;
		tp_page_set_chunk(t, p, NULL);
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
	tp_pager_drop_offloading(pg, t, TP_PAGE_OFFLOADED);
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
				tp_page_set_chunk(t, &t->pages[i], NULL);
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
	if (!t->dead && !t->unreserved)
		tp_lookup_del_tensor(pg, t);
	tp_range_cache_forget(t);
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
	/* Its pins are gone with its last reference. */
	if (t->pinned_sum)
		tp_tensor_pinned_add(t, -(long)t->pinned_pages);
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
	/* While @t is still whole, before fake deletion takes its memory. */
	if (!t->slab && t->resident_pages == t->nr_pages && pg->regen.settle &&
	    pg->victim.settle_on_free &&
	    pg->victim.settle_on_free(pg->victim.priv))
		pg->regen.settle(pg->regen.priv, t);
	if (!t->unreserved)
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
