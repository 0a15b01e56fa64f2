/* SPDX-License-Identifier: MIT */
/*
 * The default victim ops, used until a policy installs its own: the least
 * recently used candidate leaves, offloaded when it may be and host swap
 * has room, else evicted when lineage can regenerate it.
 */
#include <errno.h>

#include "config.h"
#include "pager/pager_int.h"

static void lru_add(void *priv, struct tp_tensor *t)
{
	struct tp_pager *pg = priv;

	cds_list_add_tail(&t->lru, &pg->lru);
}

static void lru_del(void *priv, struct tp_tensor *t)
{
	cds_list_del_init(&t->lru);
}

static void lru_touch(void *priv, struct tp_tensor *t)
{
	struct tp_pager *pg = priv;

	cds_list_del(&t->lru);
	cds_list_add_tail(&t->lru, &pg->lru);
}

static int lru_choose(void *priv, size_t need_bytes, bool no_offload,
		      struct tp_tensor **victim, enum tp_leave *how)
{
	struct tp_pager *pg = priv;
	struct tp_tensor *t;

	cds_list_for_each_entry(t, &pg->lru, lru) {
		if (!no_offload && tp_pager_can_offload(t)) {
			*how = TP_LEAVE_OFFLOAD;
		} else if (tp_pager_can_evict(pg, t)) {
			*how = TP_LEAVE_EVICT;
		} else {
			continue;
		}
		*victim = t;
		return 0;
	}
	return -ENOENT;
}

void tp_victim_lru_init(struct tp_pager *pg, struct tp_victim_ops *ops)
{
	/* No optional member of the ops replaced may survive. */
	*ops = (struct tp_victim_ops){ 0 };
	ops->add = lru_add;
	ops->del = lru_del;
	ops->touch = lru_touch;
	ops->choose = lru_choose;
	ops->priv = pg;
}
