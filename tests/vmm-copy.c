/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous copies round-trip data exactly, and events order them
 * across streams: a copy made to wait on another stream's event does not
 * start before that event, and work on one stream runs in order.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"

#define NR 6
#define PER_BACKEND 14

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static bool all_zero(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity, len = NR * g - 13, i;
	bool host = strcmp(name, "host") == 0;
	struct tp_event *up, *down, *never;
	unsigned char *src, *dst, *dst2;
	struct tp_chunk *c[NR];
	uintptr_t va;
	int ret;

	src = tp_vmm_host_alloc(vmm, NR * g);
	dst = tp_vmm_host_alloc(vmm, NR * g);
	dst2 = tp_vmm_host_alloc(vmm, NR * g);
	up = tp_vmm_event_create(vmm);
	down = tp_vmm_event_create(vmm);
	never = tp_vmm_event_create(vmm);
	if (!src || !dst || !dst2 || !up || !down || !never)
		bail_out("%s: buffers and events", name);
	vt_fill(src, NR * g, vt_seed() + 1);
	memset(dst, 0, NR * g);

	ok_rc(tp_vmm_reserve(vmm, NR * g, &va) ?: tp_vmm_chunks_take(vmm, c, NR) ?:
	      tp_vmm_map(vmm, va, c, NR), "%s: %d chunks mapped", name, NR);
	ok(tp_vmm_event_query(vmm, never) == 0,
	   "%s: an event never recorded has completed", name);

	/*
	 * h2d on its stream; d2h waits for it on the other. With the h2d
	 * engine held (host), the d2h must not run: its event stays pending
	 * and the destination untouched.
	 */
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_H2D, true);
	ret = tp_vmm_copy_h2d(vmm, va, src, len, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, up, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_D2H, up);
	ret = ret ?: tp_vmm_copy_d2h(vmm, dst, va, len, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, down, TP_STREAM_D2H);
	ok_rc(ret, "%s: h2d, event, d2h waiting on it, event: enqueued", name);
	if (host) {
		nap_ms(30);
		ok(tp_vmm_event_query(vmm, up) == -EAGAIN &&
		   tp_vmm_event_query(vmm, down) == -EAGAIN,
		   "host: both events pending while the h2d engine is held");
		ok(all_zero(dst, len),
		   "host: the d2h did not start before the event it waits on");
		tp_vmm_host_gate(vmm, TP_STREAM_H2D, false);
	} else {
		skip(2, "%s: no way to hold a copy engine", name);
	}
	ok_rc(tp_vmm_event_sync(vmm, down), "%s: sync the d2h event", name);
	ok(tp_vmm_event_query(vmm, up) == 0 && tp_vmm_event_query(vmm, down) == 0,
	   "%s: both events completed", name);
	ok(memcmp(dst, src, len) == 0 && all_zero(dst + len, NR * g - len),
	   "%s: %zu bytes round-trip exactly, nothing beyond", name, len);

	/* In-order on one stream: overlapping writes, the last one wins. */
	for (i = 0; i < 8; i++) {
		vt_fill(dst2, g, vt_seed() + 100 + i);
		ret = tp_vmm_copy_h2d(vmm, va + g, dst2, g, TP_STREAM_H2D);
		ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
		if (ret)
			break;
	}
	ok_rc(ret, "%s: 8 writes of one page", name);
	memset(dst, 0, g);
	ret = tp_vmm_copy_d2h(vmm, dst, va + g, g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
	ok(!ret && memcmp(dst, dst2, g) == 0, "%s: the last write is read back",
	   name);

	/*
	 * Queue without syncing in between: h2d of A then h2d of B into the
	 * same page on one stream, d2h after both; must see B.
	 */
	vt_fill(src, g, vt_seed() + 7);
	vt_fill(dst2, g, vt_seed() + 8);
	ret = tp_vmm_copy_h2d(vmm, va, src, g, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_copy_h2d(vmm, va, dst2, g, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, up, TP_STREAM_H2D);
	/* The compute stream waits too: a copy on it runs after both. */
	ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_COMPUTE, up);
	memset(dst, 0, g);
	ret = ret ?: tp_vmm_copy_d2h(vmm, dst, va, g, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_COMPUTE);
	ok(!ret && memcmp(dst, dst2, g) == 0,
	   "%s: the compute stream's copy follows the h2d it waited on", name);

	/* Re-recording an event moves it to the new point. */
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = tp_vmm_copy_d2h(vmm, dst, va, g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, down, TP_STREAM_D2H);
	if (host) {
		ok(!ret && tp_vmm_event_query(vmm, down) == -EAGAIN,
		   "host: a re-recorded event is pending again");
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	} else {
		skip(1, "%s: no way to hold a copy engine", name);
	}
	ok_rc(tp_vmm_sync_all(vmm), "%s: sync everything", name);
	ok(tp_vmm_event_query(vmm, down) == 0 &&
	   vmm->stats.call[TP_CALL_COPY].units >= 2 * len + 12 * g,
	   "%s: done, copy bytes counted", name);

	tp_vmm_unmap(vmm, va, c, NR);
	tp_vmm_chunks_put(vmm, c, NR);
	tp_vmm_release(vmm, va, NR * g);
	tp_vmm_event_put(vmm, up);
	tp_vmm_event_put(vmm, down);
	tp_vmm_event_put(vmm, never);
	tp_vmm_host_free(vmm, src, NR * g);
	tp_vmm_host_free(vmm, dst, NR * g);
	tp_vmm_host_free(vmm, dst2, NR * g);
}

int main(void)
{
	/* One engine thread per stream, then three sharing each long copy. */
	static const struct vt_case cases[] = {
		{ "host", NULL },
		{ "host", "vmm.host.copy_threads=3" },
		{ "cuda", NULL },
		{ NULL, NULL },
	};

	return vt_run_cases(cases, PER_BACKEND, 512 << 10, NR, body);
}
