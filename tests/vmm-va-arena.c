/* SPDX-License-Identifier: MIT */
/*
 * The address-space arena (vmm/va_arena.h, vmm.va_reserve).
 *
 * The arena alone: ranges start on the alignment, never overlap, each is
 * followed by a free granule; freed ranges merge back, so that after
 * random carving and freeing the holes and the live ranges cover the
 * arena exactly; a range larger than any hole is refused.
 *
 * Through the vmm, on host and sim: the first range reserves the arena
 * (one driver call), every later reserve and release makes none; a range
 * the arena cannot hold is reserved on its own and released to the
 * backend; vmm.va_reserve = 0 makes a call per range, as before; on host,
 * bytes written through a range carved from the arena read back.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/test-rand.h"
#include "tests/vmm-util.h"
#include "vmm/va_arena.h"

#define ALIGN	(2u << 20)
#define SLOTS	64

struct live {
	uintptr_t va;
	size_t len;
};

/* Holes sorted, apart, inside; with the live ranges they tile the arena. */
static bool tiles(const struct tp_va_arena *a, const struct live *l,
		  size_t n)
{
	size_t sum = 0;

	for (size_t i = 0; i < a->nholes; i++) {
		const struct tp_va_hole *h = &a->holes[i];

		if (h->start < a->base || h->start + h->len > a->base + a->len ||
		    h->start % ALIGN || h->len % ALIGN)
			return false;
		if (i && h[-1].start + h[-1].len >= h->start)
			return false;
		sum += h->len;
	}
	for (size_t i = 0; i < n; i++) {
		if (!l[i].len)
			continue;
		sum += l[i].len + ALIGN;
		for (size_t j = 0; j < a->nholes; j++)
			if (l[i].va < a->holes[j].start + a->holes[j].len &&
			    a->holes[j].start < l[i].va + l[i].len + ALIGN)
				return false;
		for (size_t j = i + 1; j < n; j++)
			if (l[j].len && l[i].va < l[j].va + l[j].len + ALIGN &&
			    l[j].va < l[i].va + l[i].len + ALIGN)
				return false;
	}
	return sum == a->len;
}

static void test_arena(void)
{
	const uintptr_t base = (uintptr_t)1 << 40;
	struct live l[SLOTS] = { 0 };
	struct tp_va_arena a;
	uint64_t seed = 0xa7e4a;
	unsigned bad = 0, refused = 0, rounds = 4000;
	uintptr_t va, v2;

	ok(!tp_va_arena_init(&a, base, 256 * ALIGN, ALIGN), "arena of 256 granules");
	ok(tp_va_arena_alloc(&a, 3 * ALIGN, &va) && va == base &&
	   tp_va_arena_alloc(&a, ALIGN, &v2) && v2 == base + 4 * ALIGN,
	   "first fit, with a free granule after each range");
	ok(!tp_va_arena_alloc(&a, 255 * ALIGN, &va),
	   "a range larger than any hole is refused");
	tp_va_arena_free(&a, base, 3 * ALIGN);
	tp_va_arena_free(&a, base + 4 * ALIGN, ALIGN);
	ok(a.nholes == 1 && a.holes[0].start == base &&
	   a.holes[0].len == 256 * ALIGN && a.ranges == 0,
	   "freed ranges merge back into one hole");

	for (unsigned r = 0; r < rounds; r++) {
		unsigned i = tt_rand(&seed) % SLOTS;

		if (l[i].len) {
			tp_va_arena_free(&a, l[i].va, l[i].len);
			l[i].len = 0;
		} else {
			size_t len = (1 + tt_rand(&seed) % 8) * ALIGN;

			if (tp_va_arena_alloc(&a, len, &l[i].va))
				l[i].len = len;
			else
				refused++;
		}
		bad += !tiles(&a, l, SLOTS);
	}
	ok(!bad, "%u random carvings and frees: holes and ranges tile the arena, none overlaps (%u refused for room)",
	   rounds, refused);
	for (unsigned i = 0; i < SLOTS; i++)
		if (l[i].len)
			tp_va_arena_free(&a, l[i].va, l[i].len);
	ok(a.nholes == 1 && a.holes[0].len == 256 * ALIGN,
	   "all freed: one hole again");
	tp_va_arena_fini(&a);
}

static uint64_t calls(const struct tp_vmm *vmm, enum tp_vmm_call k)
{
	return vmm->stats.call[k].calls;
}

static void test_vmm(const char *backend)
{
	char why[256];
	struct tp_vmm *vmm;
	uintptr_t va[3], big;
	size_t g;
	int ret;

	/* 64 MiB of device memory: an arena of 128 MiB. */
	vmm = vt_open(backend, 2u << 20,
		      "vmm.device_memory=64M,vmm.va_reserve=2", why,
		      sizeof(why));
	if (!vmm) {
		ok(0, "%s", why);
		skip(4, "no vmm");
		return;
	}
	g = vmm->granularity;
	ret = tp_vmm_reserve(vmm, g, &va[0]) ?:
	      tp_vmm_reserve(vmm, 4 * g, &va[1]) ?:
	      tp_vmm_reserve(vmm, 2 * g, &va[2]);
	ok(!ret && calls(vmm, TP_CALL_RESERVE) == 1 &&
	   vmm->arena.ranges == 3 && vmm->stats.ranges_reserved == 3,
	   "%s: three ranges, one driver call (the arena's)", backend);
	if (!ret && tp_vmm_has_data(vmm)) {
		struct tp_chunk *c[4];
		unsigned char *buf = tp_vmm_host_alloc(vmm, 4 * g);
		bool same = false;

		ret = tp_vmm_pool_create(vmm, 8 * g) ?:
		      tp_vmm_chunks_take(vmm, c, 4) ?:
		      tp_vmm_map(vmm, va[1], c, 4);
		if (!ret && buf) {
			memset((void *)va[1], 0x3c, 4 * g);
			ret = tp_vmm_copy_d2h(vmm, buf, va[1], 4 * g,
					      TP_STREAM_D2H) ?:
			      tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
			same = !ret && buf[0] == 0x3c && buf[4 * g - 1] == 0x3c;
			tp_vmm_unmap(vmm, va[1], c, 4);
			tp_vmm_chunks_put(vmm, c, 4);
		}
		ok(same, "%s: bytes written through a carved range read back",
		   backend);
		tp_vmm_host_free(vmm, buf, 4 * g);
	} else {
		skip(1, "%s keeps no data", backend);
	}
	for (int i = 0; i < 3; i++)
		tp_vmm_release(vmm, va[i], (i == 0 ? 1 : i == 1 ? 4 : 2) * g);
	ok(calls(vmm, TP_CALL_RELEASE) == 0 && vmm->stats.ranges_reserved == 0,
	   "%s: released without a driver call", backend);
	ret = tp_vmm_reserve(vmm, 256u << 20, &big);
	ok(!ret && calls(vmm, TP_CALL_RESERVE) == 2 &&
	   !tp_vmm_release(vmm, big, 256u << 20) &&
	   calls(vmm, TP_CALL_RELEASE) == 1,
	   "%s: a range larger than the arena is reserved and released on its own",
	   backend);
	tp_vmm_close(vmm);

	vmm = vt_open(backend, 2u << 20, "vmm.va_reserve=0", why, sizeof(why));
	ret = vmm ? tp_vmm_reserve(vmm, 2u << 20, &va[0]) ?:
		    tp_vmm_reserve(vmm, 2u << 20, &va[1]) : -1;
	ok(!ret && calls(vmm, TP_CALL_RESERVE) == 2 &&
	   !vmm->arena_on,
	   "%s: vmm.va_reserve = 0: a driver call per range", backend);
	if (!ret) {
		tp_vmm_release(vmm, va[0], 2u << 20);
		tp_vmm_release(vmm, va[1], 2u << 20);
	}
	tp_vmm_close(vmm);
}

int main(void)
{
	plan_tests(6 + 2 * 5);
	test_arena();
	test_vmm("host");
	test_vmm("sim");
	return exit_status();
}
