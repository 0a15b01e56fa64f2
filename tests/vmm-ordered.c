/* SPDX-License-Identifier: MIT */
/*
 * Ordered reuse (vmm.mapping = extents): memory unmapped behind work in
 * flight goes back to the pool at once, fenced by that work, while its
 * old mapping stays until the work completes. A taker maps it elsewhere
 * and orders its streams after the fence: nothing it writes lands before
 * the old work read what it needed, and the host never waits. Memory
 * fenced by a copy in flight is "pending": taken last. A handle is
 * released (re-carved) only once its old mapping is gone; with
 * vmm.release_behind = 0, before the take that re-carves returns (behind
 * it: tests/vmm-release-behind).
 *
 * Host holds the copy with a gate and checks the bytes; sim holds it in
 * virtual time and checks the clocks.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"
#include "vmm/backend_sim.h"
#include "vmm/deferred.h"

#define NR		4
#define BUDGET		384	/* handles of up to 12 chunks */
#define PER_BACKEND	14

static int fill(void *arg)
{
	memset(arg, 0x5a, NR * 256 << 10);
	return 0;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity;
	bool host = strcmp(name, "host") == 0;
	struct tp_chunk *c[NR], *d[NR], *e[BUDGET];
	struct tp_event *copied, *used;
	unsigned char *buf, *pattern = NULL;
	uintptr_t a, b;
	uint64_t t0, released, ns;
	/* the sim's h200 profile plays the driver thread */
	bool played = !host && !tp_vmm_op_ns(vmm, "any", &(struct tp_op_work){ 0 }, &ns);
	int ret;

	ok(vmm->ordered_reuse, "%s: extents reuse memory in stream order", name);
	buf = tp_vmm_host_alloc(vmm, NR * g);
	copied = tp_vmm_event_create(vmm);
	used = tp_vmm_event_create(vmm);
	if (host) {
		pattern = malloc(NR * g);
		vt_fill(pattern, NR * g, vt_seed() + 11);
		memset(buf, 0, NR * g);
	}
	if (!buf || !copied || !used || (host && !pattern))
		bail_out("%s: buffers", name);
	ret = tp_vmm_reserve(vmm, NR * g, &a) ?: tp_vmm_reserve(vmm, NR * g, &b);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	ret = ret ?: tp_vmm_map(vmm, a, c, NR);
	if (!ret && host)
		ret = tp_vmm_copy_h2d(vmm, a, pattern, NR * g, TP_STREAM_H2D) ?:
		      tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
	ok_rc(ret, "%s: a handle of %d chunks mapped at A and filled", name, NR);

	/* An offload: the copy out is held, the memory goes back at once. */
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = tp_vmm_copy_d2h(vmm, buf, a, NR * g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, copied, TP_STREAM_D2H);
	t0 = tp_vmm_now_ns(vmm);
	ret = ret ?: tp_vmm_unmap_after(vmm, a, c, NR, copied);
	ok(!ret && vmm->stats.deferred_unmaps == 1 && c[0]->old_maps == 1 &&
	   c[0]->fence == copied && vmm->stats.chunks_mapped == 0,
	   "%s: unmapped after the copy: the old mapping waits, the handle is fenced",
	   name);
	ok(tp_vmm_chunks_pending(vmm) == NR &&
	   tp_vmm_chunks_free(vmm) == BUDGET - NR &&
	   tp_vmm_chunks_takeable(vmm, BUDGET) &&
	   !tp_vmm_chunks_fit(vmm, BUDGET),
	   "%s: its chunks are pending (a copy fences them), all takeable", name);
	ok(!host || !memcmp((void *)a, pattern, NR * g),
	   "%s: the old mapping still holds the bytes", name);

	/* Another size takes memory without the fenced handle. */
	ret = tp_vmm_chunks_take(vmm, e, 2 * NR);
	ok(!ret && e[0] != c[0] && e[0]->pages == 2 * NR,
	   "%s: a run of %d takes fresh memory, not the pending handle", name,
	   2 * NR);
	if (!ret)
		tp_vmm_chunks_put(vmm, e, 2 * NR);

	/* The same size, when nothing else will do, takes it: no wait. */
	ret = tp_vmm_chunks_take(vmm, e, BUDGET - NR);
	ret = ret ?: tp_vmm_chunks_take(vmm, d, NR);
	/*
	 * On host the copy is still held: had the take waited, no return.
	 * On sim the clock did not move (the h200 profile charges the
	 * handles made, not the copy: the fence is still there to order).
	 */
	ok(!ret && d[0] == c[0] &&
	   (host || (played ? d[0]->fence == copied :
			      tp_vmm_now_ns(vmm) == t0)),
	   "%s: the pending handle is taken last, and the host did not wait",
	   name);
	ret = ret ?: tp_vmm_map(vmm, b, d, NR);
	ret = ret ?: tp_vmm_chunks_order(vmm, d, NR, 1u << TP_STREAM_COMPUTE);
	ok(!ret && d[0]->fence == NULL && d[0]->va == b &&
	   (played || d[0]->old_maps == 1),
	   "%s: mapped at B beside its old mapping, compute ordered after the copy",
	   name);
	if (host) {
		/* Work on B waits for the copy out of A: release it now. */
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
		ret = tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 0, fill, (void *)b);
		ret = ret ?: tp_vmm_sync_all(vmm);
		ok(!ret && !memcmp(buf, pattern, NR * g),
		   "host: the copy out read A's bytes before B was written");
	} else {
		ret = tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 1000, NULL, NULL);
		ret = ret ?: tp_vmm_event_record(vmm, used, TP_STREAM_COMPUTE);
		ret = ret ?: tp_vmm_event_sync(vmm, used);
		ok(!ret && tp_vmm_now_ns(vmm) >= t0 + tp_vmm_sim_copy_ns(vmm,
							NR * g) + 1000,
		   "sim: the op on B ran after the copy out of A");
	}
	ret = tp_vmm_sync_all(vmm);
	ok(!ret && vmm->stats.deferred_unmaps == 0 && d[0]->old_maps == 0,
	   "%s: the copy done, the old mapping at A is gone", name);
	ok(vmm->stats.chunks_mapped == NR,
	   "%s: %d chunks mapped: the memory was counted once", name, NR);

	/* A handle still mapped where work reads it is never released. */
	ret = tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 50000, NULL, NULL);
	ret = ret ?: tp_vmm_event_record(vmm, used, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_unmap_after(vmm, b, d, NR, used);
	tp_vmm_chunks_put(vmm, e, BUDGET - NR);
	ok(!ret && (host || d[0]->old_maps == 1) &&
	   vmm->deferred->mode == (host ? TP_DEFERRED_THREAD :
				   played ? TP_DEFERRED_PLAYED :
					    TP_DEFERRED_POLL),
	   "%s: unmapped behind compute: %s", name,
	   host ? "the driver thread unmaps the old mapping" :
	   played ? "the played driver thread will unmap it" :
		    "the old mapping waits for the caller's poll");
	t0 = tp_vmm_now_ns(vmm);
	released = vmm->stats.handles_released;
	/*
	 * The handles of 12 taken, then a run of 10: the free 8 and 2 more,
	 * which only the 4 still mapped at B can be re-carved into.
	 */
	ret = tp_vmm_chunks_take(vmm, e, BUDGET - 3 * NR);
	ret = ret ?: tp_vmm_chunks_take(vmm, e + BUDGET - 3 * NR, 10);
	ok(!ret && e[0]->pages == 12 && e[BUDGET - 3 * NR]->pages == 2 * NR &&
	   e[BUDGET - 3 * NR + 9]->pages == 2 &&
	   vmm->stats.handles_released == released + 1,
	   "%s: a run of 10 is the free 8 and 2 re-carved from the 4", name);
	ok(!ret && vmm->stats.deferred_unmaps == 0 &&
	   (host || tp_vmm_now_ns(vmm) > t0),
	   "%s: the re-carve waited for the old mapping to go first", name);
	if (!ret)
		tp_vmm_chunks_put(vmm, e, BUDGET - 3 * NR + 10);
	tp_vmm_release(vmm, a, NR * g);
	tp_vmm_release(vmm, b, NR * g);
	tp_vmm_event_put(vmm, copied);
	tp_vmm_event_put(vmm, used);
	tp_vmm_host_free(vmm, buf, NR * g);
	free(pattern);
}

int main(void)
{
	static const struct vt_case cases[] = {
		/*
		 * re-carved handles released before the take returns (maps
		 * made ahead leave them to the driver thread instead:
		 * tests/vmm-map-ahead)
		 */
		{ "host", "vmm.release_behind=0" },
		{ "sim", "vmm.release_behind=0" },
		{ "sim", "vmm.sim.profile=h200,vmm.release_behind=0,"
			 "vmm.map_ahead=off" },
		{ NULL, NULL },
	};

	return vt_run_cases(cases, PER_BACKEND, 256 << 10, BUDGET, body);
}
