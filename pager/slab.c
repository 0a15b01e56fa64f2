/* SPDX-License-Identifier: MIT */
/*
 * Small tensors share slab chunks: one mapped chunk cut into equal slots
 * of a power-of-two size. They stay resident and are never paged one by
 * one; paging them would cost a driver call per few bytes (DTR ignores
 * small tensors too). A slab that holds no tensor is kept for the next
 * one until memory is short.
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "pager/pager_int.h"

void tp_slab_init(struct tp_pager *pg, double fraction)
{
	pg->slabs.max_bytes = (size_t)(fraction * pg->chunk);
	for (unsigned i = 0; i < TP_SLAB_CLASSES; i++)
		CDS_INIT_LIST_HEAD(&pg->slabs.cls[i]);
}

bool tp_slab_fits(const struct tp_pager *pg, size_t bytes)
{
	return bytes < pg->slabs.max_bytes;
}

static unsigned class_of(size_t bytes)
{
	unsigned c = TP_SLAB_MIN_SHIFT;

	while (((size_t)1 << c) < bytes)
		c++;
	return c;
}

static struct tp_slab *slab_new(struct tp_pager *pg, unsigned cls)
{
	struct tp_slab *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cls = cls;
	s->nr_slots = pg->chunk >> cls;
	s->owner = calloc(s->nr_slots, sizeof(*s->owner));
	if (!s->owner) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = tp_pager_make_room(pg, 1);
	if (ret)
		goto err_free;
	ret = tp_vmm_reserve(pg->vmm, pg->chunk, &s->va);
	if (ret)
		goto err_free;
	ret = tp_vmm_chunks_take(pg->vmm, &s->chunk, 1);
	if (ret)
		goto err_release;
	ret = tp_vmm_map(pg->vmm, s->va, &s->chunk, 1);
	if (ret)
		goto err_put;
	/* Its slots are written by ops and the caller's copies: compute. */
	ret = tp_vmm_chunks_order(pg->vmm, &s->chunk, 1,
				  1u << TP_STREAM_COMPUTE |
				  (pg->host_waits ? TP_ORDER_HOST : 0));
	if (ret) {
		tp_vmm_unmap(pg->vmm, s->va, &s->chunk, 1);
		goto err_put;
	}
	s->lnode.key = s->va;
	s->lnode.slab = s;
	tp_lookup_add_slab(pg, s);
	cds_list_add(&s->link, &pg->slabs.cls[cls - TP_SLAB_MIN_SHIFT]);
	pg->slabs.chunks++;
	pg->slabs.idle++;
	tp_pager_held_add(pg, 1);
	return s;

err_put:
	tp_vmm_chunks_put(pg->vmm, &s->chunk, 1);
err_release:
	tp_vmm_release(pg->vmm, s->va, pg->chunk);
err_free:
	free(s->owner);
	free(s);
	errno = -ret;
	return NULL;
}

int tp_slab_alloc(struct tp_pager *pg, struct tp_tensor *t)
{
	unsigned cls = class_of(t->bytes);
	struct tp_slab *s, *found = NULL;
	unsigned slot;

	if (cls - TP_SLAB_MIN_SHIFT >= TP_SLAB_CLASSES ||
	    ((size_t)1 << cls) > pg->chunk)
		return -EINVAL;
	cds_list_for_each_entry(s, &pg->slabs.cls[cls - TP_SLAB_MIN_SHIFT], link) {
		if (s->nr_used < s->nr_slots) {
			found = s;
			break;
		}
	}
	if (!found) {
		found = slab_new(pg, cls);
		if (!found)
			return -errno;
	}
	s = found;
	for (slot = 0; s->owner[slot]; slot++)
		;
	if (!s->nr_used)
		pg->slabs.idle--;
	s->nr_used++;
	rcu_assign_pointer(s->owner[slot], t);
	t->slab = s;
	t->slab_slot = slot;
	t->va = s->va + ((uintptr_t)slot << cls);
	t->nr_pages = 1;
	t->resident_pages = 1;
	return 0;
}

void tp_slab_free(struct tp_pager *pg, struct tp_tensor *t)
{
	struct tp_slab *s = t->slab;

	rcu_assign_pointer(s->owner[t->slab_slot], NULL);
	if (!--s->nr_used)
		pg->slabs.idle++;
	t->resident_pages = 0;
}

static void slab_free_rcu(struct rcu_head *head)
{
	struct tp_slab *s = caa_container_of(head, struct tp_slab, rcu);

	free(s->owner);
	free(s);
}

static void slab_release(struct tp_pager *pg, struct tp_slab *s)
{
	struct tp_event *ev;
	int ret = -ENOMEM;

	tp_lookup_del_slab(pg, s);
	cds_list_del(&s->link);
	ev = tp_pager_compute_event(pg);
	if (ev)
		ret = tp_vmm_unmap_after(pg->vmm, s->va, &s->chunk, 1, ev);
	if (ret) {
		tp_vmm_stream_sync(pg->vmm, TP_STREAM_COMPUTE);
		if (tp_vmm_unmap(pg->vmm, s->va, &s->chunk, 1) == 0)
			tp_vmm_chunks_put(pg->vmm, &s->chunk, 1);
	}
	if (ev)
		tp_vmm_event_put(pg->vmm, ev);
	tp_vmm_release(pg->vmm, s->va, pg->chunk);
	pg->slabs.chunks--;
	if (!s->nr_used)
		pg->slabs.idle--;
	tp_pager_held_add(pg, -1);
	call_rcu(&s->rcu, slab_free_rcu);
}

size_t tp_slab_shrink(struct tp_pager *pg)
{
	struct tp_slab *s;

	if (!pg->slabs.idle)
		return 0;
	for (unsigned i = 0; i < TP_SLAB_CLASSES; i++) {
		cds_list_for_each_entry(s, &pg->slabs.cls[i], link) {
			if (!s->nr_used) {
				slab_release(pg, s);
				return 1;
			}
		}
	}
	return 0;
}

void tp_slab_fini(struct tp_pager *pg)
{
	struct tp_slab *s, *tmp;

	for (unsigned i = 0; i < TP_SLAB_CLASSES; i++)
		cds_list_for_each_entry_safe(s, tmp, &pg->slabs.cls[i], link)
			slab_release(pg, s);
}
