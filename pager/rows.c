/* SPDX-License-Identifier: MIT */
/*
 * Rows held by an op run in parts (lineage/op_split.c): a cut input that
 * streams is read a part's rows at a time, and while it is, its unread
 * rows leave by offload only (an evicted one would bring the whole tensor
 * back by regeneration, where one in host swap comes back alone); the
 * rows read, and a cut output's rows written, are the holder's to let go
 * (tp_pager_rows_done()).
 */
#include "config.h"

#include <errno.h>

#include "pager/pager_int.h"

unsigned tp_pager_leave_flags(const struct tp_tensor *t)
{
	return t->flags | (t->rows_held ? TP_EVICT_PINNED : 0);
}

void tp_pager_hold_rows(struct tp_pager *pg, struct tp_tensor *t, bool hold)
{
	if (hold)
		t->rows_held++;
	else if (t->rows_held)
		t->rows_held--;
	tp_pager_cand_update(pg, t);
}

bool tp_pager_rows_offloaded(struct tp_pager *pg, const struct tp_tensor *t)
{
	return !tp_pager_evictable(pg, t) ||
	       (pg->victim.rows_offload &&
		pg->victim.rows_offload(pg->victim.priv, t));
}

int tp_pager_rows_done(struct tp_pager *pg, struct tp_tensor *t, size_t off,
		       size_t len, bool written)
{
	bool evict = !written && !tp_pager_rows_offloaded(pg, t);
	int ret;

	if (evict)
		return tp_pager_evict_range_checked(pg, t, off, len);
	ret = tp_pager_offload_range(pg, t, off, len);
	/* Host swap full: what can be regenerated goes all the same. */
	if (ret == -ENOSPC && !written && tp_pager_evictable(pg, t))
		return tp_pager_evict_range_checked(pg, t, off, len);
	return ret;
}

size_t tp_pager_swapped_pages(const struct tp_tensor *t)
{
	size_t n = 0;

	for (size_t i = 0; t->pages && i < t->nr_pages; i++)
		n += t->pages[i].state == TP_PAGE_OFFLOADED ||
		     t->pages[i].state == TP_PAGE_OFFLOADING;
	return n;
}

size_t tp_pager_missing_pages(const struct tp_pager *pg,
			      const struct tp_tensor *t, size_t off,
			      size_t len)
{
	if (!len || !t->pages)
		return 0;
	return tp_pages_needing_chunks(t, off / pg->chunk,
				       (off + len - 1) / pg->chunk, false);
}
