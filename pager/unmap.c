/* SPDX-License-Identifier: MIT */
/*
 * Unmapping a tensor's pages once nothing in flight still reads them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

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
			tp_pager_uncache_page(pg, t, &t->pages[j]);
			tp_page_set_chunk(t, &t->pages[j], NULL);
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
