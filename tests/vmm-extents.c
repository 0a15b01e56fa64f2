/* SPDX-License-Identifier: MIT */
/*
 * The extent pool (vmm.mapping = extents): a run of pages is backed by
 * one handle of its size (or a few of the largest allowed), which maps
 * and unmaps whole and only whole; free handles are reused by size;
 * when the budget has no room for the size wanted, a free handle of at
 * least half of it backs the run's first part, and only without one are
 * free handles released to make it (re-carving), with the data of the
 * handles in use untouched; a take
 * fails only for want of free memory. On the sim's h200 profile a
 * handle costs what the H200 measured for its size, once per call; on
 * the cuda backend (over the stand-in driver) the driver is called once
 * per handle, whatever its size.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/sim_profile.h"

#define BUDGET		640	/* chunks: handles of up to 20 (1/32) */
#define MAXH		(BUDGET / 32)
#define PER_BACKEND	30

static int put_bytes(struct tp_vmm *vmm, uintptr_t va, const void *src,
		     size_t len)
{
	return tp_vmm_copy_h2d(vmm, va, src, len, TP_STREAM_H2D) ?:
	       tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
}

static int get_bytes(struct tp_vmm *vmm, void *dst, uintptr_t va, size_t len)
{
	return tp_vmm_copy_d2h(vmm, dst, va, len, TP_STREAM_D2H) ?:
	       tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
}

/* Handles in a per-page array of @n entries, -1 if it is not whole. */
static long handles_in(struct tp_chunk *const *c, size_t n)
{
	long h = 0;

	for (size_t i = 0; i < n; i += c[i]->pages, h++)
		for (size_t j = i; j < i + c[i]->pages; j++)
			if (j >= n || c[j] != c[i])
				return -1;
	return h;
}

/* The stand-in driver's per-handle charges, when it is the driver. */
static bool fake_counts(unsigned long out[5])
{
	const char *lib = getenv("TPAGER_TEST_CUDA_LIBRARY");
	void (*fn)(unsigned long *);
	void *h;

	if (!lib || !(h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)))
		return false;
	*(void **)&fn = dlsym(h, "fake_cuda_counts");
	if (fn)
		fn(out);
	dlclose(h);
	return fn != NULL;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity, i, j, big;
	bool data = tp_vmm_has_data(vmm);
	struct tp_chunk *a[BUDGET], *b[BUDGET], *c[BUDGET];
	unsigned char *src = NULL, *dst = NULL;
	unsigned long before[5], after[5];
	uint64_t creates, released, t0, ns;
	uintptr_t va, vb;
	bool fake;

	ok(vmm->mapping == TP_VMM_MAPPING_EXTENTS && vmm->extent_max == MAXH,
	   "%s: extents of at most %d chunks (1/32 of %d)", name, MAXH, BUDGET);
	ok_rc(tp_vmm_reserve(vmm, 64 * g, &va) ?:
	      tp_vmm_reserve(vmm, 64 * g, &vb), "%s: two ranges", name);
	if (data) {
		src = tp_vmm_host_alloc(vmm, 64 * g);
		dst = tp_vmm_host_alloc(vmm, 64 * g);
		if (!src || !dst)
			bail_out("host buffers");
		vt_fill(src, 64 * g, vt_seed() + 7);
	}

	/* One run, one handle. */
	ok_rc(tp_vmm_chunks_take(vmm, a, 10), "%s: take a run of 10", name);
	ok(handles_in(a, 10) == 1 && a[0]->pages == 10 &&
	   vmm->stats.handles == 1 && vmm->stats.chunks_created == 10 &&
	   tp_vmm_chunks_free(vmm) == BUDGET - 10,
	   "%s: one handle of 10 chunks backs it", name);
	ok(tp_vmm_map(vmm, va, a, 5) == -EINVAL &&
	   tp_vmm_map(vmm, va, a + 5, 5) == -EINVAL &&
	   vmm->stats.chunks_mapped == 0,
	   "%s: half a handle cannot be mapped (nothing mapped)", name);
	fake = fake_counts(before);
	ok_rc(tp_vmm_map(vmm, va, a, 10), "%s: the whole handle maps", name);
	if (fake_counts(after))
		ok(after[0] - before[0] == 1 && after[1] - before[1] == 1,
		   "%s: the driver mapped one handle and set access once (%lu, %lu)",
		   name, after[0] - before[0], after[1] - before[1]);
	else
		ok(vmm->stats.call[TP_CALL_MAP].calls == 1,
		   "%s: one counted map call", name);
	ok(tp_vmm_unmap(vmm, va, a, 4) == -EINVAL &&
	   tp_vmm_unmap(vmm, va + g, a + 1, 9) == -EINVAL &&
	   vmm->stats.chunks_mapped == 10,
	   "%s: part of a handle cannot be unmapped (still mapped)", name);
	if (data) {
		int ret = put_bytes(vmm, va, src, 10 * g);

		ret = ret ?: tp_vmm_unmap(vmm, va, a, 10);
		/* The same handle at another range: the same bytes. */
		ret = ret ?: tp_vmm_map(vmm, vb, a, 10);
		memset(dst, 0, 10 * g);
		ret = ret ?: get_bytes(vmm, dst, vb, 10 * g);
		ok(!ret && !memcmp(dst, src, 10 * g),
		   "%s: remapped whole at another range, it holds its bytes",
		   name);
		ok_rc(tp_vmm_unmap(vmm, vb, a, 10), "%s: unmap it", name);
	} else {
		ok_rc(tp_vmm_unmap(vmm, va, a, 10), "%s: unmap it", name);
		ok(1, "%s: (no data on sim)", name);
	}
	if (fake && fake_counts(after))
		ok(after[2] - before[2] == (data ? 2 : 1),
		   "%s: each unmap was one handle for the driver", name);
	else
		ok(vmm->stats.chunks_mapped == 0, "%s: nothing mapped", name);

	/* Longer than a handle may be: the largest handles, then the rest. */
	ok_rc(tp_vmm_chunks_take(vmm, b, 2 * MAXH + 3),
	      "%s: take a run of %d", name, 2 * MAXH + 3);
	ok(handles_in(b, 2 * MAXH + 3) == 3 && b[0]->pages == MAXH &&
	   b[MAXH]->pages == MAXH && b[2 * MAXH]->pages == 3,
	   "%s: backed by %d + %d + 3", name, MAXH, MAXH);
	ok_rc(tp_vmm_map(vmm, va, b, 2 * MAXH + 3) ?:
	      tp_vmm_unmap(vmm, va, b, 2 * MAXH + 3),
	      "%s: maps and unmaps as one run", name);
	tp_vmm_chunks_put(vmm, b, 2 * MAXH + 3);

	/* Reuse by size: no driver call for a handle of a size that is free. */
	tp_vmm_chunks_put(vmm, a, 10);
	creates = vmm->stats.handles_created;
	ok_rc(tp_vmm_chunks_take(vmm, c, 10), "%s: take 10 again", name);
	ok(c[0] == a[0] && vmm->stats.handles_created == creates,
	   "%s: the free handle of 10 came back, nothing created", name);

	/*
	 * A run the free handles make up: the budget all in free handles of
	 * 10 but one in use, holding data; a run of 13 takes a free handle of
	 * 10, and one of 3 made by re-carving one more of 10.
	 */
	for (i = 10; i + 10 <= BUDGET; i += 10)
		if (tp_vmm_chunks_take(vmm, c + i, 10))
			break;
	ok(i == BUDGET && tp_vmm_chunks_free(vmm) == 0,
	   "%s: the budget taken in handles of 10", name);
	if (data)
		ok_rc(tp_vmm_map(vmm, va, c, 10) ?: put_bytes(vmm, va, src, 10 * g),
		      "%s: the first holds data", name);
	else
		ok_rc(tp_vmm_map(vmm, va, c, 10), "%s: the first is mapped",
		      name);
	tp_vmm_chunks_put(vmm, c + 10, BUDGET - 10);
	creates = vmm->stats.recarves;
	released = vmm->stats.handles_released;
	ok_rc(tp_vmm_chunks_take(vmm, b, 13), "%s: take a run of 13", name);
	ok(handles_in(b, 13) == 2 && b[0]->pages == 10 && b[10]->pages == 3 &&
	   vmm->stats.recarves == creates + 1 &&
	   vmm->stats.handles_released == released + 1 &&
	   tp_vmm_chunks_free(vmm) == BUDGET - 10 - 13,
	   "%s: a free handle of 10 and one of 3 re-carved from another 10",
	   name);
	ok(tp_vmm_chunks_take(vmm, a, BUDGET - 10 - 13 + 1) == -ENOMEM &&
	   tp_vmm_chunks_free(vmm) == BUDGET - 10 - 13,
	   "%s: one chunk more than is free: -ENOMEM, nothing taken", name);
	/* Every free chunk in one run, whatever the free handles' sizes. */
	ok_rc(tp_vmm_chunks_take(vmm, a, BUDGET - 10 - 13),
	      "%s: all that is free, in one run", name);
	tp_vmm_chunks_put(vmm, a, BUDGET - 10 - 13);
	tp_vmm_chunks_put(vmm, b, 13);

	/*
	 * Re-carving: the budget in free handles of 4 but the one in use; a
	 * run of 13 is no free handle's, and none is half of it: free ones
	 * are released, oldest first, for one handle of 13.
	 */
	for (i = 10; i < BUDGET; i += 4)
		if (tp_vmm_chunks_take(vmm, c + i, BUDGET - i < 4 ? BUDGET - i : 4))
			break;
	for (j = 10, big = 0; i >= BUDGET && j < BUDGET; j += c[j]->pages)
		big += c[j]->pages > 4;
	ok(i >= BUDGET && !big && tp_vmm_chunks_free(vmm) == 0,
	   "%s: the budget taken again, in handles of at most 4", name);
	tp_vmm_chunks_put(vmm, c + 10, BUDGET - 10);
	creates = vmm->stats.recarves;
	released = vmm->stats.handles_released;
	ok_rc(tp_vmm_chunks_take(vmm, b, 13), "%s: take a run of 13", name);
	ok(handles_in(b, 13) == 1 && vmm->stats.recarves == creates + 1 &&
	   vmm->stats.handles_released >= released + 4 &&
	   tp_vmm_chunks_free(vmm) == BUDGET - 10 - 13,
	   "%s: re-carved: %llu free handles released for one of 13", name,
	   (unsigned long long)(vmm->stats.handles_released - released));
	if (data) {
		memset(dst, 0, 10 * g);
		ok(!get_bytes(vmm, dst, va, 10 * g) && !memcmp(dst, src, 10 * g),
		   "%s: the handle in use still holds its bytes", name);
	} else {
		ok(1, "%s: (no data on sim)", name);
	}
	tp_vmm_chunks_put(vmm, b, 13);
	ok_rc(tp_vmm_unmap(vmm, va, c, 10), "%s: unmap the first", name);
	tp_vmm_chunks_put(vmm, c, 10);
	ok(tp_vmm_chunks_free(vmm) == BUDGET && vmm->stats.chunks_mapped == 0,
	   "%s: everything free again", name);

	/* What a handle costs on the H200 profile, as measured. */
	if (tp_vmm_op_ns(vmm, "any", &(struct tp_op_work){ 0 }, &ns) == 0) {
		const struct tp_sim_profile *p = &tp_sim_profile_h200;

		uint64_t want = 0;

		ok_rc(tp_vmm_chunks_take(vmm, a, MAXH), "sim-h200: a run");
		/* as a training run pays them, nothing being copied */
		for (i = 0; i < MAXH; i += a[i]->pages)
			want += (uint64_t)llround(p->run_factor[TP_SIM_MAP] *
				(double)tp_sim_handle_ns(p, TP_SIM_MAP,
							 a[i]->pages * g)) +
				(uint64_t)llround(p->run_factor[TP_SIM_SET_ACCESS] *
				(double)tp_sim_handle_ns(p, TP_SIM_SET_ACCESS,
							 a[i]->pages * g));
		t0 = tp_vmm_now_ns(vmm);
		ok(!tp_vmm_map(vmm, va, a, MAXH) &&
		   tp_vmm_now_ns(vmm) - t0 == want,
		   "sim-h200: a map costs each handle's map and set access (%ld handles)",
		   handles_in(a, MAXH));
		tp_vmm_unmap(vmm, va, a, MAXH);
		tp_vmm_chunks_put(vmm, a, MAXH);
	} else {
		skip(2, "%s: costs are the h200 profile's", name);
	}
	tp_vmm_release(vmm, va, 64 * g);
	tp_vmm_release(vmm, vb, 64 * g);
	if (data) {
		tp_vmm_host_free(vmm, src, 64 * g);
		tp_vmm_host_free(vmm, dst, 64 * g);
	}
}

int main(void)
{
	static const struct vt_case cases[] = {
		{ "host", NULL },
		{ "sim", NULL },
		/* the caller's clock pays the maps: made on its thread */
		{ "sim", "vmm.sim.profile=h200,vmm.map_ahead=off" },
		{ "cuda", NULL },
		{ NULL, NULL },
	};

	return vt_run_cases(cases, PER_BACKEND, 64 << 10, BUDGET, body);
}
