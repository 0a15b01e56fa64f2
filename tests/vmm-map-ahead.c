/* SPDX-License-Identifier: MIT */
/*
 * Maps made ahead (vmm.map_ahead): where a driver thread runs or is
 * played (cuda, sim with a profile), the map of a run is queued and the
 * caller goes on; before it issues work on a stream it waits, on the
 * host, until the map is made, as the driver refuses a copy enqueued
 * over addresses not mapped yet. Elsewhere (host, sim without a profile,
 * the key off) the caller maps as before.
 *
 * cuda (the stand-in driver) makes every map 20 ms late: a copy issued
 * before the map is made is refused there as on the device, and an
 * unmap at once that did not wait would find nothing to unmap; the
 * bytes written are read back. Sim checks the clocks: the caller pays
 * nothing for the map until it issues the copy, which starts after the
 * map lands, and a copy issued before (the backend called directly) is
 * refused. A map the driver
 * thread fails stops every later sync with an error instead of a hang.
 *
 * Re-carving: a take that must release a handle whose old mapping work
 * still reads returns at once; the driver thread makes the new handle
 * after that release, device memory never holds more than the budget,
 * and the work on the new handle runs after the old work (sim: by the
 * clocks). A handle the driver thread has still to make (its map 20 ms
 * late on the stand-in driver), freed behind its mapping and re-carved
 * at once, is made, mapped, unmapped and only then released (cuda).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_sim.h"
#include "vmm/chunk_pool.h"
#include "vmm/deferred.h"

#define NR		8
#define POOL		64
#define PER_BACKEND	12
#define WORK_NS		50000000	/* sim: 50 ms of work on the old mapping */

/* What a backend is expected to do with the key on. */
static bool goes_ahead(struct tp_vmm *vmm, const char *name)
{
	if (vmm->map_ahead == TP_MAP_AHEAD_OFF ||
	    vmm->mapping != TP_VMM_MAPPING_EXTENTS)
		return false;
	if (!strcmp(name, "host"))
		return vmm->map_ahead == TP_MAP_AHEAD_ON;
	if (!strcmp(name, "sim"))
		return vmm->ops->plays_worker(vmm);
	return !strcmp(name, "cuda");
}

/* Checks 9-11: a re-carve behind work that reads the old mapping. */
static void recarve(struct tp_vmm *vmm, const char *name, bool sim)
{
	size_t g = vmm->granularity;
	struct tp_chunk *c[POOL], *one[1];
	struct tp_event *used = tp_vmm_event_create(vmm);
	uint64_t released = vmm->stats.handles_released, t_used = 0;
	uint64_t t_copy = 0;
	void *buf = tp_vmm_host_alloc(vmm, g);
	uintptr_t a, b;
	int ret;

	if (!used || !buf)
		bail_out("%s: an event and a buffer", name);
	/* Every chunk in handles of 2, read by work, then freed behind it. */
	ret = tp_vmm_reserve(vmm, POOL * g, &a) ?: tp_vmm_reserve(vmm, g, &b);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, POOL);
	ret = ret ?: tp_vmm_map_ahead(vmm, a, c, POOL);
	ret = ret ?: tp_vmm_launch(vmm, TP_STREAM_COMPUTE, WORK_NS, NULL,
				   NULL);
	ret = ret ?: tp_vmm_event_record(vmm, used, TP_STREAM_COMPUTE);
	if (sim && !ret)
		vmm->ops->event_when(vmm, used, &t_used);
	ret = ret ?: tp_vmm_unmap_after(vmm, a, c, POOL, used);
	if (ret)
		bail_out("%s: the pool filled and freed behind work: %d", name,
			 ret);

	/* A run of 1: no free handle of 1, a handle of 2 re-carved. */
	ret = tp_vmm_chunks_take(vmm, one, 1);
	ok(!ret && one[0]->pages == 1 &&
	   vmm->stats.handles_released == released + 1 &&
	   (!sim || tp_vmm_now_ns(vmm) < t_used),
	   "%s: a re-carve behind work on the old mapping: the take returns at once",
	   name);
	ret = ret ?: tp_vmm_map_ahead(vmm, b, one, 1);
	ret = ret ?: tp_vmm_copy_h2d(vmm, b, buf, g, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, used, TP_STREAM_H2D);
	if (sim && !ret)
		vmm->ops->event_when(vmm, used, &t_copy);
	ret = ret ?: tp_vmm_sync_all(vmm);
	ok(!ret && (!sim || t_copy > t_used),
	   "%s: the copy into the new handle ran after the old work (%s)",
	   name, sim ? "by the clocks" : "not refused, no illegal address");
	ok(vmm->stats.chunks_device_peak <= POOL,
	   "%s: device memory held the budget at most (%llu chunks)", name,
	   (unsigned long long)vmm->stats.chunks_device_peak);
	if (!ret) {
		tp_vmm_unmap(vmm, b, one, 1);
		tp_vmm_chunks_put(vmm, one, 1);
	}
	tp_vmm_release(vmm, a, POOL * g);
	tp_vmm_release(vmm, b, g);
	tp_vmm_event_put(vmm, used);
	tp_vmm_host_free(vmm, buf, g);
}

/* Errors the library logs (a driver call that failed). */
static unsigned errors_logged;

static void count_errors(enum tp_log_level level, const char *msg,
			 void *priv)
{
	(void)msg;
	(void)priv;
	if (level == TP_LOG_ERROR)
		errors_logged++;
}

/*
 * Check 12 (cuda): on a fresh pool of its own (every handle made still
 * unborn, its maps late), a run mapped ahead, freed behind its mapping,
 * and re-carved before the driver thread has made it.
 */
static void unborn_recarve(const char *name)
{
	struct tp_chunk *c[POOL], *one[1];
	struct tp_vmm *vmm;
	uint64_t released;
	bool was_unborn;
	char why[256];
	uintptr_t a, b;
	size_t g;
	int ret;

	vmm = vt_open(name, 2 << 20, NULL, why, sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, POOL * vmm->granularity)) {
		ok(0, "%s: a fresh pool: %s", name, why);
		tp_vmm_close(vmm);
		return;
	}
	g = vmm->granularity;
	released = vmm->stats.handles_released;
	errors_logged = 0;
	tp_set_log(count_errors, NULL);
	ret = tp_vmm_reserve(vmm, POOL * g, &a) ?: tp_vmm_reserve(vmm, g, &b);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, POOL);
	ret = ret ?: tp_vmm_map_ahead(vmm, a, c, POOL);
	was_unborn = !ret && (c[0]->flags & TP_CHUNK_UNBORN);
	ret = ret ?: tp_vmm_unmap_after(vmm, a, c, POOL, NULL);
	ret = ret ?: tp_vmm_chunks_take(vmm, one, 1);
	ret = ret ?: tp_vmm_map_ahead(vmm, b, one, 1);
	ret = ret ?: tp_vmm_sync_all(vmm);
	ret = ret ?: tp_vmm_unmap(vmm, b, one, 1);
	tp_set_log(NULL, NULL);
	ok(!ret && was_unborn && vmm->stats.handles_released > released &&
	   vmm->stats.chunks_device_peak <= POOL && !errors_logged,
	   "%s: a handle still to be made, freed behind its map and re-carved: made, mapped, unmapped, then released, no call failed (%d, %u errors)",
	   name, ret, errors_logged);
	if (!ret)
		tp_vmm_chunks_put(vmm, one, 1);
	tp_vmm_release(vmm, a, POOL * g);
	tp_vmm_release(vmm, b, g);
	tp_vmm_close(vmm);
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity, len = NR * g;
	bool ahead = goes_ahead(vmm, name), sim = !strcmp(name, "sim");
	bool data = tp_vmm_has_data(vmm);
	struct tp_chunk *c[NR], *d[NR];
	unsigned char *pattern = NULL, *back = NULL;
	struct tp_event *ev = tp_vmm_event_create(vmm);
	uint64_t bg0, ma0, t0, t1, landed = 0, copied = 0;
	void *buf = tp_vmm_host_alloc(vmm, len);
	uintptr_t va, vb;
	int ret;

	if (!ev || !buf)
		bail_out("%s: an event and a buffer", name);
	if (ahead && !strcmp(name, "cuda"))
		unborn_recarve(name);
	else
		skip(1, "%s: the driver thread's maps made late", name);
	bg0 = vmm->stats.bg_calls;
	ma0 = vmm->stats.maps_ahead;
	if (data) {
		pattern = malloc(len);
		back = malloc(len);
		if (!pattern || !back)
			bail_out("buffers");
		vt_fill(pattern, len, vt_seed() + 41);
	}
	ret = tp_vmm_reserve(vmm, len, &va) ?: tp_vmm_reserve(vmm, len, &vb);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	if (ret)
		bail_out("%s: reserve and take: %d", name, ret);

	/* 1: queued, or made here */
	t0 = tp_vmm_now_ns(vmm);
	ret = tp_vmm_map_ahead(vmm, va, c, NR);
	t1 = tp_vmm_now_ns(vmm);
	ok(!ret && vmm->stats.chunks_mapped == NR &&
	   vmm->stats.maps_ahead - ma0 == (ahead ? 1 : 0) &&
	   (!sim || !ahead || (t1 == t0 && vmm->stats.bg_calls >= bg0 + 2)),
	   "%s: %s (%llu maps ahead, caller's clock +%llu ns)", name,
	   ahead ? "the map goes ahead, the caller pays nothing" :
		   "mapped on the caller's thread",
	   (unsigned long long)(vmm->stats.maps_ahead - ma0),
	   (unsigned long long)(t1 - t0));

	/* 2: a copy in, issued at once, waits for the map */
	if (data)
		ret = tp_vmm_copy_h2d(vmm, va, pattern, len, TP_STREAM_H2D);
	else
		ret = tp_vmm_copy_h2d(vmm, va, buf, len, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_H2D);
	if (sim && !ret) {
		vmm->ops->event_when(vmm, ev, &copied);
		landed = vmm->deferred->ahead.played_at;
	}
	ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
	ok(!ret && (!ahead || !sim ||
		    copied >= landed + tp_vmm_sim_copy_ns(vmm, len)),
	   "%s: a copy issued right after runs after the map (%s)", name,
	   sim ? "its end past the map's and its own time" :
		 "not refused, no illegal address");

	/* 3: the bytes */
	if (data) {
		ret = tp_vmm_copy_d2h(vmm, back, va, len, TP_STREAM_D2H);
		ret = ret ?: tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
		ok(!ret && !memcmp(back, pattern, len),
		   "%s: the bytes written come back", name);
	} else {
		skip(1, "%s holds no data", name);
	}

	/* 4: an unmap at once of a run still to be mapped waits for it */
	ret = tp_vmm_chunks_take(vmm, d, NR);
	ret = ret ?: tp_vmm_map_ahead(vmm, vb, d, NR);
	ret = ret ?: tp_vmm_unmap(vmm, vb, d, NR);
	ok(!ret && vmm->stats.chunks_mapped == NR,
	   "%s: mapped (ahead where it goes) and unmapped at once: the unmap came after",
	   name);
	if (!ret)
		tp_vmm_chunks_put(vmm, d, NR);

	/* 5: an injected failure fails the call, nothing mapped */
#ifdef TP_FAULT_INJECTION
	ret = tp_vmm_chunks_take(vmm, d, NR);
	if (!ret) {
		tp_vmm_fail_at(vmm, 1, ENOMEM);
		ret = tp_vmm_map_ahead(vmm, vb, d, NR);
		ok(ret == -ENOMEM && vmm->stats.chunks_mapped == NR &&
		   d[0]->va == 0,
		   "%s: an injected failure of the map: -ENOMEM at once, nothing mapped",
		   name);
		tp_vmm_chunks_put(vmm, d, NR);
	} else {
		ok(0, "%s: a take for the injected failure: %d", name, ret);
	}
#else
	skip(1, "built without fault injection");
#endif

	/* 6: every call counted, the driver thread's apart */
	ret = tp_vmm_sync_all(vmm);
	ok(!ret && (ahead ? vmm->stats.bg_calls >= bg0 + 4 :
			    vmm->stats.maps_ahead == 0),
	   "%s: synced; %llu calls by the driver thread", name,
	   (unsigned long long)(vmm->stats.bg_calls - bg0));

	/* What the last two leave mapped, the close tears down. */
	tp_vmm_unmap(vmm, va, c, NR);
	tp_vmm_chunks_put(vmm, c, NR);
	tp_vmm_release(vmm, va, len);

	if (ahead)
		recarve(vmm, name, sim);
	else
		skip(3, "%s: handles made by the caller's take", name);

	/* 7: sim: a copy issued before its map is made is refused */
	if (sim && ahead) {
		ret = tp_vmm_chunks_take(vmm, d, NR);
		ret = ret ?: tp_vmm_map_ahead(vmm, vb, d, NR);
		/* the pages land later on the played thread's clock */
		vmm->ops->launch(vmm, TP_STREAM_H2D, NULL, 0, NULL, NULL);
		ret = ret ?: vmm->ops->copy_h2d(vmm, vb, buf, len,
						TP_STREAM_H2D);
		ok(ret == -EINVAL && !tp_vmm_stream_sync(vmm, TP_STREAM_H2D),
		   "%s: a copy issued before its map is made is refused (-EINVAL), as the driver refuses it",
		   name);
	} else {
		skip(1, "%s: the sim's check of its clocks", name);
		tp_vmm_release(vmm, vb, len);
	}

	/* 8: cuda: a map the driver thread fails stops the syncs */
	if (!strcmp(name, "cuda") && ahead) {
		const char *lib = getenv("TPAGER_TEST_CUDA_LIBRARY");
		void (*fail_maps)(unsigned) = NULL;
		void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;

		if (h)
			*(void **)&fail_maps = dlsym(h, "fake_cuda_fail_maps");
		if (fail_maps) {
			ret = tp_vmm_reserve(vmm, len, &vb);
			ret = ret ?: tp_vmm_chunks_take(vmm, d, NR);
			fail_maps(1);
			ret = ret ?: tp_vmm_map_ahead(vmm, vb, d, NR);
			ok(!ret && tp_vmm_sync_all(vmm) == -ENOMEM &&
			   tp_vmm_copy_h2d(vmm, vb, buf, g, TP_STREAM_H2D) ==
			   -ENOMEM,
			   "%s: the driver thread's map failed: the sync and the work after fail, no hang",
			   name);
		} else {
			skip(1, "not the stand-in driver");
		}
		if (h)
			dlclose(h);
	} else {
		skip(1, "%s: a failure on the driver thread", name);
	}
	/* Closing tears down what the failures left. */
	tp_vmm_event_put(vmm, ev);
	tp_vmm_host_free(vmm, buf, len);
	free(pattern);
	free(back);
}

int main(void)
{
	static const struct vt_case cases[] = {
		{ "sim", "vmm.sim.profile=h200" },
		{ "sim", "vmm.sim.profile=h200,vmm.map_ahead=off" },
		{ "sim", NULL },
		{ "host", NULL },
		{ "cuda", NULL },
		{ NULL, NULL },
	};

	/* Every map of the stand-in driver 20 ms late, whatever the
	 * environment said (tests/vmm-cuda-fake.sh says 0). */
	setenv("FAKE_CUDA_MAP_DELAY_US", "20000", 1);
	return vt_run_cases(cases, PER_BACKEND, 2 << 20, POOL, body);
}
