/* SPDX-License-Identifier: MIT */
/*
 * The physical handles behind a tensor's pages. A handle backs a run of
 * consecutive pages and maps and unmaps whole (vmm.mapping = extents:
 * the driver charges per handle, so a tensor's run is one handle), so
 * pages leave by whole handles: a page shares the fate of the others of
 * its handle. On the chunked pool every handle is one page.
 */
#include <errno.h>
#include <stdlib.h>

#include "config.h"
#include "base/array.h"
#include "pager/pager_int.h"

size_t tp_pager_handle_max(const struct tp_pager *pg)
{
	return pg->vmm->extent_max;
}

size_t tp_pager_handle_start(const struct tp_pager *pg,
			     const struct tp_tensor *t, size_t i)
{
	return tp_vmm_handle_first(pg->vmm, t->va, t->pages[i].chunk);
}

size_t tp_pager_handle_end(const struct tp_pager *pg,
			   const struct tp_tensor *t, size_t i)
{
	return tp_pager_handle_start(pg, t, i) + t->pages[i].chunk->pages;
}

bool tp_pager_handle_can_go(const struct tp_pager *pg,
			    const struct tp_tensor *t, size_t i,
			    size_t first, size_t last)
{
	const struct tp_page *p = &t->pages[i];
	size_t start, end;

	if (p->state != TP_PAGE_RESIDENT || !p->chunk)
		return false;
	start = tp_pager_handle_start(pg, t, i);
	end = start + p->chunk->pages;
	if (start < first || end - 1 > last)
		return false;
	for (size_t j = start; j < end; j++)
		if (t->pages[j].state != TP_PAGE_RESIDENT || t->pages[j].pins)
			return false;
	return true;
}

bool tp_pager_pages_inside(const struct tp_pager *pg,
			   const struct tp_tensor *t, size_t off, size_t len,
			   size_t *first, size_t *last)
{
	*first = (off + pg->chunk - 1) / pg->chunk;
	if (off + len == t->bytes)
		*last = t->nr_pages - 1;
	else if ((off + len) / pg->chunk)
		*last = (off + len) / pg->chunk - 1;
	else
		return false;
	return *first <= *last;
}

struct tp_chunk **tp_pager_run_chunks(struct tp_pager *pg,
				      const struct tp_tensor *t, size_t start,
				      size_t n)
{
	if (n > pg->run_cap) {
		struct tp_chunk **p = tp_array_grow(pg->run_buf, &pg->run_cap,
						    n, sizeof(*p), 64);

		if (!p)
			return NULL;
		pg->run_buf = p;
	}
	for (size_t i = 0; i < n; i++)
		pg->run_buf[i] = t->pages[start + i].chunk;
	return pg->run_buf;
}
