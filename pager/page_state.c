/* SPDX-License-Identifier: MIT */
/*
 * The page-state machine (DESIGN.md, "Tensors and pages"):
 *
 *   UNBACKED -> RESIDENT <-> OFFLOADING -> OFFLOADED -> RELOADING -> RESIDENT
 *               RESIDENT  -> EVICTED -> RESIDENT
 *
 * OFFLOADING -> RESIDENT is the way back when an offload's backend call
 * fails before the chunk was handed to a deferred unmap, and with
 * OFFLOADED -> RESIDENT and EVICTED -> RESIDENT a rescue's (rescue.c: the
 * memory the page left was still mapped, untaken). OFFLOADING -> EVICTED
 * drops an offload still in flight whose copy no one needs (a tensor
 * freed or fake-deleted meanwhile). OFFLOADED ->
 * EVICTED drops a swapped copy whose contents lineage no longer needs,
 * and UNBACKED -> EVICTED marks a page that was never written as one to
 * regenerate (both by tp_pager_drop_contents: an in-place input's old
 * version moved to a fresh range needs no chunk to become EVICTED). Every change goes through tp_page_set().
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "pager/pager_int.h"

static const char *const state_names[TP_NR_PAGE_STATES] = {
	[TP_PAGE_UNBACKED] = "UNBACKED",
	[TP_PAGE_RESIDENT] = "RESIDENT",
	[TP_PAGE_OFFLOADING] = "OFFLOADING",
	[TP_PAGE_OFFLOADED] = "OFFLOADED",
	[TP_PAGE_RELOADING] = "RELOADING",
	[TP_PAGE_EVICTED] = "EVICTED",
};

#define EDGE(a, b) (UINT64_C(1) << ((a) * TP_NR_PAGE_STATES + (b)))

static const uint64_t legal_edges =
	EDGE(TP_PAGE_UNBACKED, TP_PAGE_RESIDENT) |
	EDGE(TP_PAGE_RESIDENT, TP_PAGE_OFFLOADING) |
	EDGE(TP_PAGE_OFFLOADING, TP_PAGE_RESIDENT) |
	EDGE(TP_PAGE_OFFLOADING, TP_PAGE_OFFLOADED) |
	EDGE(TP_PAGE_OFFLOADED, TP_PAGE_RELOADING) |
	EDGE(TP_PAGE_OFFLOADED, TP_PAGE_RESIDENT) |
	EDGE(TP_PAGE_OFFLOADING, TP_PAGE_EVICTED) |
	EDGE(TP_PAGE_RELOADING, TP_PAGE_RESIDENT) |
	EDGE(TP_PAGE_RESIDENT, TP_PAGE_EVICTED) |
	EDGE(TP_PAGE_EVICTED, TP_PAGE_RESIDENT) |
	EDGE(TP_PAGE_OFFLOADED, TP_PAGE_EVICTED) |
	EDGE(TP_PAGE_UNBACKED, TP_PAGE_EVICTED);

const char *tp_page_state_name(enum tp_page_state s)
{
	return s < TP_NR_PAGE_STATES ? state_names[s] : "?";
}

bool tp_page_legal(enum tp_page_state from, enum tp_page_state to)
{
	if (from >= TP_NR_PAGE_STATES || to >= TP_NR_PAGE_STATES)
		return false;
	return legal_edges & EDGE(from, to);
}

static void count(struct tp_tensor *t, enum tp_page_state s, int d)
{
	switch (s) {
	case TP_PAGE_RESIDENT:
		t->resident_pages += d;
		break;
	case TP_PAGE_EVICTED:
		t->evicted_pages += d;
		break;
	case TP_PAGE_OFFLOADING:
	case TP_PAGE_RELOADING:
		t->inflight_pages += d;
		break;
	default:
		break;
	}
}

void tp_page_set(struct tp_tensor *t, struct tp_page *p, enum tp_page_state to)
{
	enum tp_page_state from = p->state;

#ifdef TP_DEBUG
	if (!tp_page_legal(from, to)) {
		fprintf(stderr, "tpager: tensor %llu page %zu: illegal transition %s -> %s\n",
			(unsigned long long)t->id, (size_t)(p - t->pages),
			tp_page_state_name(from), tp_page_state_name(to));
		abort();
	}
	/* Memory comes back only where the tensor's range is. */
	if (t->unreserved &&
	    (to == TP_PAGE_RESIDENT || to == TP_PAGE_RELOADING)) {
		fprintf(stderr, "tpager: tensor %llu page %zu: %s without a range\n",
			(unsigned long long)t->id, (size_t)(p - t->pages),
			tp_page_state_name(to));
		abort();
	}
	/* A cached copy leaves the page only with its offload. */
	if (from == TP_PAGE_RESIDENT && to != TP_PAGE_OFFLOADING && p->swap) {
		fprintf(stderr, "tpager: tensor %llu page %zu: %s -> %s with a cached host copy\n",
			(unsigned long long)t->id, (size_t)(p - t->pages),
			tp_page_state_name(from), tp_page_state_name(to));
		abort();
	}
#endif
	count(t, from, -1);
	count(t, to, 1);
	/* A pinned page that leaves or comes back is counted with it. */
	if (p->pins && (from == TP_PAGE_RESIDENT) != (to == TP_PAGE_RESIDENT))
		tp_tensor_pinned_add(t, to == TP_PAGE_RESIDENT ? 1 : -1);
	p->state = to;
	if ((from == TP_PAGE_RESIDENT) != (to == TP_PAGE_RESIDENT))
		t->runs_valid = false;
	/* Back, or never left: nothing to rescue. */
	if (to == TP_PAGE_RESIDENT || to == TP_PAGE_RELOADING ||
	    to == TP_PAGE_UNBACKED)
		p->left_mapped = false;
}
