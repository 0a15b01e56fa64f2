/* SPDX-License-Identifier: MIT */
/*
 * Address -> tensor, from any thread: an RCU hash table (liburcu's
 * cds_lfht, bulletproof flavour so that any thread may read) with one node
 * per granule of a range (the vmm's va_align, 2 MiB or a chunk if larger).
 * Reservations start and end on granules (tp_vmm_reserve()), so the
 * granule an address falls in names its owner: a paged tensor, or a slab
 * whose slot array names the tensor. Keyed by chunk, a range of small
 * chunks would cost a node, an insertion and a removal per chunk.
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

static unsigned long hash_key(uintptr_t key)
{
	uint64_t h = key;

	/* murmur3's 64-bit finaliser: chunk addresses differ in high bits */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (unsigned long)h;
}

static int match(struct cds_lfht_node *node, const void *key)
{
	const struct tp_lnode *ln = caa_container_of(node, struct tp_lnode, node);

	return ln->key == *(const uintptr_t *)key;
}

int tp_lookup_init(struct tp_pager *pg)
{
	pg->ht = cds_lfht_new(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	return pg->ht ? 0 : -ENOMEM;
}

void tp_lookup_fini(struct tp_pager *pg)
{
	if (cds_lfht_destroy(pg->ht, NULL))
		tp_log(TP_LOG_ERROR, "pager: address table not empty at exit");
	/* Let every deferred free run before the process may exit. */
	rcu_barrier();
}

static void add_node(struct tp_pager *pg, struct tp_lnode *ln)
{
	cds_lfht_node_init(&ln->node);
	cds_lfht_add(pg->ht, hash_key(ln->key), &ln->node);
}

void tp_lookup_add_tensor(struct tp_pager *pg, struct tp_tensor *t)
{
	rcu_read_lock();
	for (size_t i = 0; i < t->lk->n; i++) {
		t->lk->node[i].key = t->va + i * pg->vmm->va_align;
		add_node(pg, &t->lk->node[i]);
	}
	rcu_read_unlock();
}

void tp_lookup_del_tensor(struct tp_pager *pg, struct tp_tensor *t)
{
	rcu_read_lock();
	for (size_t i = 0; i < t->lk->n; i++)
		cds_lfht_del(pg->ht, &t->lk->node[i].node);
	rcu_read_unlock();
}

void tp_lookup_add_slab(struct tp_pager *pg, struct tp_slab *s)
{
	rcu_read_lock();
	add_node(pg, &s->lnode);
	rcu_read_unlock();
}

void tp_lookup_del_slab(struct tp_pager *pg, struct tp_slab *s)
{
	rcu_read_lock();
	cds_lfht_del(pg->ht, &s->lnode.node);
	rcu_read_unlock();
}

struct tp_tensor *tp_lookup(struct tp_pager *pg, uintptr_t addr)
{
	uintptr_t key = addr - addr % pg->vmm->va_align;
	struct tp_tensor *t = NULL;
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	rcu_read_lock();
	cds_lfht_lookup(pg->ht, hash_key(key), match, &key, &iter);
	node = cds_lfht_iter_get_node(&iter);
	if (node) {
		struct tp_lnode *ln = caa_container_of(node, struct tp_lnode, node);

		if (ln->slab) {
			struct tp_slab *s = ln->slab;
			size_t slot = (addr - s->va) >> s->cls;

			/* A chunk size that is not a multiple of the slot
			 * size leaves a tail no slot covers. */
			if (slot < s->nr_slots)
				t = rcu_dereference(s->owner[slot]);
		} else {
			t = rcu_dereference(ln->t);
		}
		/* Inside the range but past the bytes given at creation. */
		if (t && (addr < t->va || addr - t->va >= t->bytes))
			t = NULL;
	}
	rcu_read_unlock();
	return t;
}
