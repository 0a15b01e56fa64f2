/* SPDX-License-Identifier: MIT */
/*
 * Re-carving behind (vmm.release_behind > 0): where a driver thread does the
 * driver's slow work (host and cuda), or the sim's h200 profile plays
 * one, a take that must release free handles to make room in the budget
 * releases them on that thread. The caller neither waits for the old
 * mappings of those handles nor pays their release; the thread releases
 * a handle only once its old mapping is unmapped. Device memory then
 * holds the dying handles beside the budget, never more than
 * vmm.release_behind percent of it: past that the take waits for them.
 * With vmm.release_behind = 0 it always does (tests/vmm-ordered).
 *
 * Host holds the work on the old mapping (a copy out) with a gate: a take
 * that waited for it would never return; it checks the bytes of the
 * handles made. Sim holds it (an op of 50 ms) in virtual time and checks
 * the clocks; cuda (the stand-in driver) holds nothing, and checks what
 * does not depend on when its driver thread runs. The last case leaves a
 * headroom smaller than the handle.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"

#define NR		4	/* the handle whose old mapping waits */
#define BUDGET		384	/* handles of up to 12 chunks */
#define PER_BACKEND	8

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity;
	bool host = strcmp(name, "host") == 0;
	bool sim = strcmp(name, "sim") == 0;
	bool held = host || sim;
	bool tight = vmm->release_behind == 1;
	struct tp_chunk *c[NR], *e[BUDGET];
	struct tp_event *copied;
	unsigned char *buf, *pattern = NULL, *back = NULL;
	uint64_t released, t_copy = 0;
	uintptr_t a, b;
	int ret;

	buf = tp_vmm_host_alloc(vmm, BUDGET * g);
	copied = tp_vmm_event_create(vmm);
	if (host) {
		pattern = malloc(BUDGET * g);
		back = malloc(BUDGET * g);
		vt_fill(pattern, BUDGET * g, vt_seed() + 23);
	}
	if (!buf || !copied || (host && (!pattern || !back)))
		bail_out("%s: buffers", name);

	/* A handle of 4 at A, read by a copy out that is held. */
	ret = tp_vmm_reserve(vmm, NR * g, &a) ?:
	      tp_vmm_reserve(vmm, BUDGET * g, &b);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	ret = ret ?: tp_vmm_map(vmm, a, c, NR);
	if (!sim) {
		/* cuda cannot hold it: the driver thread may be done first */
		if (host)
			tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
		ret = ret ?: tp_vmm_copy_d2h(vmm, buf, a, NR * g,
					     TP_STREAM_D2H);
		ret = ret ?: tp_vmm_event_record(vmm, copied, TP_STREAM_D2H);
	} else {
		/* on sim, an op of 50 ms reads it: its end is far off */
		ret = ret ?: tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 50000000,
					   NULL, NULL);
		ret = ret ?: tp_vmm_event_record(vmm, copied,
						 TP_STREAM_COMPUTE);
		ret = ret ?: vmm->ops->event_when(vmm, copied, &t_copy);
	}
	ret = ret ?: tp_vmm_unmap_after(vmm, a, c, NR, copied);
	/* (cuda's driver thread may have unmapped it already) */
	ok(!ret && (held ? vmm->stats.deferred_unmaps == 1 :
			   vmm->stats.deferred_unmaps <= 1) &&
	   tp_vmm_chunks_takeable(vmm, BUDGET),
	   "%s: a handle of %d unmapped behind a held copy: back in the pool",
	   name, NR);

	/* Every chunk in handles of 12: the one of 4 must be re-carved. */
	released = vmm->stats.handles_released;
	ret = tp_vmm_chunks_take(vmm, e, BUDGET);
	ok(!ret && e[0]->pages == 12 && e[BUDGET - 1]->pages == 12 &&
	   vmm->stats.handles_released == released + 1,
	   "%s: all of it in handles of 12: the handle of 4 released", name);
	if (tight) {
		ok(!ret && vmm->stats.chunks_dying == 0 &&
		   vmm->stats.deferred_unmaps == 0 &&
		   tp_vmm_now_ns(vmm) >= t_copy,
		   "%s: past the headroom, the take waited for it to go", name);
		ok(vmm->stats.chunks_device_peak <= BUDGET,
		   "%s: device memory held the budget at most (%llu chunks)",
		   name, (unsigned long long)vmm->stats.chunks_device_peak);
	} else if (!held) {
		ok(!ret && vmm->stats.chunks_dying <= NR,
		   "%s: the take returned, the release behind or done", name);
		ok(vmm->stats.chunks_device_peak <= BUDGET + NR,
		   "%s: device memory held the budget and the dying handle at most (%llu chunks)",
		   name, (unsigned long long)vmm->stats.chunks_device_peak);
	} else {
		/* On host the copy is still held: a take that waited for
		 * the old mapping would not have returned. */
		ok(!ret && vmm->stats.chunks_dying == NR &&
		   vmm->stats.deferred_unmaps == 1 &&
		   (host || tp_vmm_now_ns(vmm) < t_copy),
		   "%s: the take did not wait: the old mapping and the release are behind",
		   name);
		ok(vmm->stats.chunks_device_peak == BUDGET + NR,
		   "%s: device memory held the budget and the dying handle (%llu chunks)",
		   name, (unsigned long long)vmm->stats.chunks_device_peak);
	}

	/* The new handles hold what is written, the old work done or not. */
	ret = ret ?: tp_vmm_map(vmm, b, e, BUDGET);
	if (host) {
		ret = ret ?: tp_vmm_copy_h2d(vmm, b, pattern, BUDGET * g,
					     TP_STREAM_H2D);
		ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	}
	/* the device idle, and every unmap and release behind done */
	ret = ret ?: tp_vmm_sync_all(vmm);
	ok(!ret && vmm->stats.chunks_dying == 0 &&
	   vmm->stats.deferred_unmaps == 0 &&
	   vmm->stats.handles == BUDGET / 12,
	   "%s: the old mapping unmapped, then the handle released", name);
	if (host) {
		ret = ret ?: tp_vmm_copy_d2h(vmm, back, b, BUDGET * g,
					     TP_STREAM_D2H);
		ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
		ok(!ret && !memcmp(back, pattern, BUDGET * g),
		   "%s: every new handle holds its bytes after the release",
		   name);
	} else {
		ok(!ret, "%s: synced (the bytes are checked on host)", name);
	}
	ok_rc(tp_vmm_unmap(vmm, b, e, BUDGET), "%s: unmapped", name);
	tp_vmm_chunks_put(vmm, e, BUDGET);
	ok(tp_vmm_chunks_free(vmm) == BUDGET && vmm->stats.chunks_mapped == 0,
	   "%s: everything free again", name);
	tp_vmm_release(vmm, a, NR * g);
	tp_vmm_release(vmm, b, BUDGET * g);
	tp_vmm_event_put(vmm, copied);
	tp_vmm_host_free(vmm, buf, BUDGET * g);
	free(pattern);
	free(back);
}

int main(void)
{
	static const struct vt_case cases[] = {
		/* the new handles made by the take (with maps made ahead,
		 * the driver thread makes them: tests/vmm-map-ahead) */
		{ "host", "vmm.release_behind=10" },
		{ "sim", "vmm.sim.profile=h200,vmm.release_behind=10,"
			 "vmm.map_ahead=off" },
		{ "cuda", "vmm.release_behind=10,vmm.map_ahead=off" },
		/* 1% of 384 chunks: 3, less than the handle of 4 */
		{ "sim", "vmm.sim.profile=h200,vmm.release_behind=1,"
			 "vmm.map_ahead=off" },
		{ NULL, NULL },
	};

	return vt_run_cases(cases, PER_BACKEND, 256 << 10, BUDGET, body);
}
