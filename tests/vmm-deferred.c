/* SPDX-License-Identifier: MIT */
/*
 * Deferred unmap: chunks unmapped after an event do not come back to the
 * pool, and their pages stay mapped, until the copy that reads them has
 * completed; the vmm keeps its own reference to the event. Host holds the
 * copy with a gate; sim holds it in virtual time.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"

#define NR 4
#define PER_BACKEND 15

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity;
	bool host = strcmp(name, "host") == 0;
	bool data = tp_vmm_has_data(vmm);
	struct tp_chunk *c[NR], *more[NR];
	unsigned char *pattern = NULL, *buf;
	struct tp_event *ev;
	uintptr_t va;
	uint64_t t0;
	int ret;

	buf = tp_vmm_host_alloc(vmm, NR * g);
	ev = tp_vmm_event_create(vmm);
	if (data) {
		pattern = malloc(NR * g);
		vt_fill(pattern, NR * g, vt_seed() + 3);
		memset(buf, 0, NR * g);
	}
	if (!buf || !ev || (data && !pattern))
		bail_out("%s: buffers", name);

	ret = tp_vmm_reserve(vmm, NR * g, &va);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	ret = ret ?: tp_vmm_map(vmm, va, c, NR);
	if (!ret && data)
		ret = tp_vmm_copy_h2d(vmm, va, pattern, NR * g, TP_STREAM_H2D) ?:
		      tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
	ok_rc(ret, "%s: %d chunks mapped and filled", name, NR);

	/* The offload: d2h of the whole range, then the deferred unmap. */
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	t0 = tp_vmm_now_ns(vmm);
	ret = tp_vmm_copy_d2h(vmm, buf, va, NR * g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_unmap_after(vmm, va, c, NR, ev);
	ok_rc(ret, "%s: d2h, event, unmap after the event", name);
	/* Only the vmm's reference keeps the event now. */
	tp_vmm_event_put(vmm, ev);

	ok(tp_vmm_chunks_pending(vmm) == NR && tp_vmm_chunks_free(vmm) == 1 &&
	   vmm->stats.deferred_unmaps == 1,
	   "%s: %d chunks pending, the spare one free", name, NR);
	ok(tp_vmm_chunks_take(vmm, more, 2) == -ENOMEM &&
	   tp_vmm_chunks_free(vmm) == 1,
	   "%s: pending chunks cannot be taken", name);
	ok(tp_vmm_reap(vmm) == 0 && tp_vmm_chunks_pending(vmm) == NR,
	   "%s: reaping before the copy completes does nothing", name);
	ok(vmm->stats.chunks_mapped == NR,
	   "%s: the pages stay mapped meanwhile", name);
	if (data)
		ok(memcmp((void *)va, pattern, NR * g) == 0,
		   "%s: and still hold their data", name);
	else
		ok(tp_vmm_now_ns(vmm) == t0,
		   "%s: and nothing waited: the host clock did not move", name);

	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	ok_rc(tp_vmm_reap_wait(vmm), "%s: wait for the oldest pending unmap",
	      name);
	ok(tp_vmm_chunks_pending(vmm) == 0 && tp_vmm_chunks_free(vmm) == NR + 1 &&
	   vmm->stats.deferred_unmaps == 0 && vmm->stats.chunks_mapped == 0,
	   "%s: the chunks are back and unmapped", name);
	ok(!data || memcmp(buf, pattern, NR * g) == 0,
	   "%s: the copy read the pages before they went", name);
	ok(tp_vmm_reap_wait(vmm) == -ENOENT, "%s: nothing pending: -ENOENT",
	   name);

	/*
	 * A range with a pending unmap is mapped again: the map completes the
	 * pending unmap first instead of mapping over live pages.
	 */
	ev = tp_vmm_event_create(vmm);
	/* Handles of one chunk, so that pages can go apart (and, on the
	 * extent pool, the handle of NR chunks is re-carved for them). */
	ret = 0;
	for (int i = 0; i < NR && !ret; i++)
		ret = tp_vmm_chunks_take(vmm, &c[i], 1);
	ret = ret ?: tp_vmm_map(vmm, va, c, NR);
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = ret ?: tp_vmm_copy_d2h(vmm, buf, va + g, g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_unmap_after(vmm, va + g, c + 1, NR - 1, ev);
	ok(!ret && tp_vmm_chunks_pending(vmm) == NR - 1,
	   "%s: map again, unmap all but the first page after a copy", name);
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	ret = tp_vmm_chunks_take(vmm, more, 1);
	ret = ret ?: tp_vmm_map(vmm, va + g, more, 1);
	ok(!ret && tp_vmm_chunks_pending(vmm) == 0 &&
	   vmm->stats.chunks_mapped == 2,
	   "%s: mapping over the pending range completed it first", name);
	if (!ret) {
		struct tp_chunk *both[2] = { c[0], more[0] };

		ret = tp_vmm_unmap(vmm, va, both, 2);
	}
	if (!ret) {
		tp_vmm_chunks_put(vmm, c, 1);
		tp_vmm_chunks_put(vmm, more, 1);
	}
	ok(!ret && tp_vmm_chunks_free(vmm) == NR + 1 &&
	   vmm->stats.chunks_mapped == 0, "%s: all chunks free again", name);

	/* An event that has completed needs no deferral. */
	ret = tp_vmm_chunks_take(vmm, c, 1);
	ret = ret ?: tp_vmm_map(vmm, va, c, 1);
	ret = ret ?: tp_vmm_event_sync(vmm, ev);
	ret = ret ?: tp_vmm_unmap_after(vmm, va, c, 1, ev);
	ok(!ret && tp_vmm_chunks_pending(vmm) == 0 &&
	   tp_vmm_chunks_free(vmm) == NR + 1,
	   "%s: unmap after a completed event is immediate", name);
	tp_vmm_event_put(vmm, ev);

	tp_vmm_release(vmm, va, NR * g);
	tp_vmm_host_free(vmm, buf, NR * g);
	free(pattern);
}

int main(void)
{
	static const char *const backends[] = { "host", "sim", NULL };

	/* The chunks wait for their work; ordered reuse: vmm-ordered. */
	return vt_run(backends, PER_BACKEND, 256 << 10, "vmm.mapping=chunks",
		      NR + 1, body);
}
