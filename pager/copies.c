/* SPDX-License-Identifier: MIT */
/*
 * Copies in flight: tensors with pages OFFLOADING or RELOADING, their
 * events polled or waited on, and the record of copy times.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/array.h"
#include "base/log.h"
#include "pager/pager_int.h"

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
	/* Taken first: the swap cache sets the page's event anew. */
	struct tp_event *ev = p->ev;

	p->ev = NULL;
	if (p->state == TP_PAGE_OFFLOADING) {
		/* The vmm returns the chunk through its deferred unmap. */
		tp_page_set_chunk(t, p, NULL);
		tp_page_set(t, p, TP_PAGE_OFFLOADED);
	} else if (p->state == TP_PAGE_RELOADING) {
		void *buf = p->swap;

		p->swap = NULL;
		tp_page_set(t, p, TP_PAGE_RESIDENT);
		/* The copy is complete: nothing uses the buffer now. */
		tp_pager_reloaded_buffer(pg, t, p, buf, NULL);
	}
	tp_vmm_event_put(pg->vmm, ev);
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

/*
 * Poll one tensor; pages of one copy share an event, queried once, done
 * or not: a copy still in flight was asked again for each of its pages,
 * thousands of times a poll at 64 KiB chunks (DTR's ResNet-32 log at 10%:
 * two thirds of the replay's time).
 */
static void poll_tensor(struct tp_pager *pg, struct tp_tensor *t, bool wait)
{
	struct tp_event *asked = NULL;
	int ret = 0;

	for (size_t i = 0; i < t->nr_pages && t->inflight_pages; i++) {
		struct tp_page *p = &t->pages[i];

		if (!p->ev || (p->state != TP_PAGE_OFFLOADING &&
			       p->state != TP_PAGE_RELOADING))
			continue;
		if (p->ev != asked) {
			asked = p->ev;
			if (wait) {
				tp_vmm_wait_why("copies to land");
				ret = tp_vmm_event_sync(pg->vmm, p->ev);
			} else {
				ret = tp_vmm_event_query(pg->vmm, p->ev);
			}
		}
		if (ret)
			continue;
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

	/* The copies' wait for maps made ahead is not the link's time. */
	if (tp_vmm_gate(pg->vmm, s))
		return NULL;
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
		struct tp_copy_rec *r;

		r = tp_array_grow(pg->copies, &pg->cap_copies,
				  pg->cap_copies + 1, sizeof(*r), 32);
		if (!r) {
			/* only a measurement is lost */
			if (start)
				tp_vmm_event_put(pg->vmm, start);
			return;
		}
		pg->copies = r;
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
void tp_pager_poll_copies(struct tp_pager *pg, bool all)
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
		tp_pager_poll_copies(pg, false);
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
		tp_vmm_wait_why("a tensor's copies (settle)");
		ret = tp_vmm_event_sync(pg->vmm, p->ev);
		if (ret)
			return ret;
		page_complete(pg, t, p);
	}
	tp_pager_inflight_done(pg, t);
	return 0;
}
