/* SPDX-License-Identifier: MIT */
/*
 * tp_vmm_event_elapsed_ns: the time between the moments the stream
 * reached two events, which for events around one launch is the time the
 * work took, however long before the first event the stream went idle;
 * pending or unrecorded events are refused. And the host link as the
 * backend knows it before any copy (the policy's first b): the sim's
 * configured link, a timed probe copy on cuda, nothing on host.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"

#define MS 1000000ull
#define WORK_MS 20ull
#define IDLE_MS 200ull

static void sleep_ms(unsigned long long ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static int work(void *arg)
{
	sleep_ms(WORK_MS);
	return 0;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	struct tp_event *a = tp_vmm_event_create_timed(vmm);
	struct tp_event *b = tp_vmm_event_create_timed(vmm);
	struct tp_event *c = tp_vmm_event_create_timed(vmm);
	bool sim = !strcmp(name, "sim"), host = !strcmp(name, "host");
	uint64_t ns = 12345;
	void *buf = tp_vmm_host_alloc(vmm, 4096);
	struct tp_chunk *ch;
	uintptr_t va = 0;
	int ret;

	ok(a && b && c && buf, "%s: timed events created", name);
	if (sim)
		ok(vmm->link_bytes_per_ns == 12.0,
		   "%s: the link is vmm.sim.bandwidth's 12 GB/s (%.2f)", name,
		   vmm->link_bytes_per_ns);
	else if (host)
		ok(vmm->link_bytes_per_ns == 0,
		   "%s: memory copies say nothing of a link (%.2f)", name,
		   vmm->link_bytes_per_ns);
	else
		ok(vmm->link_bytes_per_ns > 0,
		   "%s: a timed probe copy at open gives the link: %.2f GB/s",
		   name, vmm->link_bytes_per_ns);
	ret = tp_vmm_event_elapsed_ns(vmm, a, b, &ns);
	ok(ret == -EINVAL && ns == 12345,
	   "%s: events never recorded are refused (%d)", name, ret);

	/*
	 * Earlier work, then the stream sits idle: an event recorded after
	 * that is reached when recorded, not when the earlier work ended.
	 */
	ret = tp_vmm_launch(vmm, TP_STREAM_COMPUTE, MS, NULL, NULL);
	if (!sim)
		sleep_ms(IDLE_MS);
	ret = ret ?: tp_vmm_event_record(vmm, a, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_launch(vmm, TP_STREAM_COMPUTE, WORK_MS * MS, work,
				   NULL);
	ret = ret ?: tp_vmm_event_record(vmm, b, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_event_sync(vmm, b);
	ret = ret ?: tp_vmm_event_elapsed_ns(vmm, a, b, &ns);
	if (sim)
		ok(!ret && ns == WORK_MS * MS,
		   "%s: elapsed is the charged cost exactly (%llu ns)", name,
		   (unsigned long long)ns);
	else
		ok(!ret && ns >= WORK_MS * MS - MS / 2 &&
		   ns < (WORK_MS + IDLE_MS) * MS,
		   "%s: elapsed %llu ns covers the %llu ms of work, not the idle time before",
		   name, (unsigned long long)ns, WORK_MS);
	ret = tp_vmm_event_elapsed_ns(vmm, b, a, &ns);
	ok(!ret && ns == 0, "%s: events in reverse order give 0 (%d, %llu)",
	   name, ret, (unsigned long long)ns);

	/* A copy still in flight: its end event is not timed yet. */
	ret = tp_vmm_reserve(vmm, vmm->granularity, &va);
	ret = ret ?: tp_vmm_chunks_take(vmm, &ch, 1);
	ret = ret ?: tp_vmm_map(vmm, va, &ch, 1);
	if (host)
		ret = ret ?: tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = ret ?: tp_vmm_event_record(vmm, a, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_copy_d2h(vmm, buf, va, 4096, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, c, TP_STREAM_D2H);
	if (!ret && (host || sim)) {
		ns = 777;
		ret = tp_vmm_event_elapsed_ns(vmm, a, c, &ns);
		ok(ret == -EAGAIN && ns == 777,
		   "%s: a pending event gives -EAGAIN, nothing stored (%d)",
		   name, ret);
	} else {
		skip(1, "%s: every event completes at once", name);
	}
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	ret = tp_vmm_event_sync(vmm, c);
	ret = ret ?: tp_vmm_event_elapsed_ns(vmm, a, c, &ns);
	ok(!ret && ns < 1000 * MS, "%s: once complete the copy is timed (%llu ns)",
	   name, (unsigned long long)ns);

	if (va) {
		tp_vmm_unmap(vmm, va, &ch, 1);
		tp_vmm_chunks_put(vmm, &ch, 1);
		tp_vmm_release(vmm, va, vmm->granularity);
	}
	tp_vmm_host_free(vmm, buf, 4096);
	tp_vmm_event_put(vmm, a);
	tp_vmm_event_put(vmm, b);
	tp_vmm_event_put(vmm, c);
}

int main(void)
{
	static const char *const names[] = { "host", "sim", "cuda", NULL };

	return vt_run(names, 7, 64 << 10, NULL, 4, body);
}
