/* SPDX-License-Identifier: MIT */
/*
 * The pager's part of tp_stats_get().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

void tp_pager_stats(struct tp_pager *pg, struct tp_stats *st)
{
	const struct tp_vmm_stats *vs = &pg->vmm->stats;
	static const enum tp_vmm_call driver[] = {
		TP_CALL_RESERVE, TP_CALL_RELEASE, TP_CALL_CHUNK_CREATE,
		TP_CALL_CHUNK_DESTROY, TP_CALL_MAP, TP_CALL_SET_ACCESS,
		TP_CALL_UNMAP,
	};

	tp_pager_poll(pg);
	st->chunk_size = pg->chunk;
	st->budget_bytes = tp_pager_budget_bytes(pg);
	st->chunks_mapped = vs->chunks_mapped;
	st->chunks_peak = vs->chunks_peak;
	st->phys_bytes = vs->chunks_mapped * pg->chunk;
	st->phys_peak = vs->chunks_peak * pg->chunk;
	st->ranges_reserved = vs->ranges_reserved;
	st->tensors_live = pg->tensors_live;
	st->host_bytes = (uint64_t)pg->swap.used * pg->chunk;
	st->host_peak = (uint64_t)pg->swap.peak * pg->chunk;
	st->host_budget = pg->swap.max == SIZE_MAX ? 0 :
			  (uint64_t)pg->swap.max * pg->chunk;
	st->offloads = pg->c.offloads;
	st->reloads = pg->c.reloads;
	st->evictions = pg->c.evictions;
	st->partial_evictions = pg->c.partial_evictions;
	st->split_runs = pg->c.split_runs;
	st->split_parts = pg->c.split_parts;
	st->rows_regenerated = pg->c.rows_regenerated;
	st->recomputes = pg->c.recomputes;
	st->recompute_ns = pg->c.recompute_ns;
	st->prefetch_issued = pg->c.prefetch_issued;
	st->prefetch_hits = pg->c.prefetch_hits;
	st->prefetch_late = pg->c.prefetch_late;
	st->prefetch_wasted = pg->c.prefetch_wasted;
	st->host_cached_bytes = (uint64_t)pg->swap.cached * pg->chunk;
	st->writebacks = pg->c.writebacks;
	st->cache_offloads = pg->c.cache_offloads;
	st->bytes_d2h = pg->c.bytes_d2h;
	st->bytes_h2d = pg->c.bytes_h2d;
	st->stall_ns = pg->c.stall_ns;
	st->compute_ns = pg->c.compute_ns;
	st->range_cache_hits = pg->c.cache_hits;
	st->ranges_moved = pg->c.ranges_moved;
	st->ranges_adopted = pg->c.ranges_adopted;
	st->host_held = (uint64_t)(pg->swap.allocated + pg->swap.prep_n) *
			pg->chunk;
	st->range_cache_misses = pg->c.cache_misses;
	st->driver_calls = 0;
	st->driver_ns = 0;
	for (size_t i = 0; i < sizeof(driver) / sizeof(driver[0]); i++) {
		st->driver_calls += vs->call[driver[i]].calls;
		st->driver_ns += vs->call[driver[i]].ns;
	}
	/* Copy time runs from when the stream started a batch to its
	 * completion (tp_pager_poll_copies). */
	st->copy_d2h_ns = pg->c.copy_d2h_ns;
	st->copy_h2d_ns = pg->c.copy_h2d_ns;
	st->fragmentation_ppm = tp_vmm_frag_ppm(pg->vmm);
	st->handles = vs->handles;
	st->handle_creates = vs->handles_created;
	st->recarves = vs->handles_released;
	st->device_peak = vs->chunks_device_peak * pg->chunk;
	st->held_peak = pg->c.held_peak * pg->chunk;
	st->rescued_pages = pg->c.rescued_pages;
	st->driver_bg_calls = vs->bg_calls;
	st->driver_bg_ns = vs->bg_ns;
	st->maps_ahead = vs->maps_ahead;
	st->gate_waits = vs->gate_waits;
	st->gate_device = vs->gate_device;
	st->swap_full = pg->c.swap_full;
}
