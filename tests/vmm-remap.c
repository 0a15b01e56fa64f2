/* SPDX-License-Identifier: MIT */
/*
 * Real remapping: bytes written through one range are read back through
 * another range the same chunks were mapped into, in a different order;
 * a 1 TiB reservation costs no physical memory and its pages work.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"

#define NR 4
#define PER_BACKEND 18

/* Upload @len bytes to @va and wait for them. */
static int put_bytes(struct tp_vmm *vmm, uintptr_t va, const void *src,
		     size_t len)
{
	int ret = tp_vmm_copy_h2d(vmm, va, src, len, TP_STREAM_H2D);

	return ret ? ret : tp_vmm_stream_sync(vmm, TP_STREAM_H2D);
}

static int get_bytes(struct tp_vmm *vmm, void *dst, uintptr_t va, size_t len)
{
	int ret = tp_vmm_copy_d2h(vmm, dst, va, len, TP_STREAM_D2H);

	return ret ? ret : tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity, i;
	struct tp_chunk *c[NR], *rev[NR];
	uintptr_t a, b, huge = 0;
	unsigned char *src, *dst;
	uint64_t maps, access;
	bool same;

	src = tp_vmm_host_alloc(vmm, NR * g);
	dst = tp_vmm_host_alloc(vmm, NR * g);
	if (!src || !dst)
		bail_out("host buffers");
	vt_fill(src, NR * g, vt_seed());
	memset(dst, 0, NR * g);

	ok_rc(tp_vmm_reserve(vmm, NR * g, &a), "%s: reserve range A", name);
	ok_rc(tp_vmm_reserve(vmm, NR * g, &b), "%s: reserve range B", name);
	ok(a % g == 0 && b % g == 0 && a != b,
	   "%s: ranges are chunk-aligned and distinct", name);
	/* One take per page: handles of one chunk each on either pool. */
	for (i = 0; i < NR; i++)
		if (tp_vmm_chunks_take(vmm, &c[i], 1))
			break;
	ok(i == NR, "%s: take %d chunks", name, NR);

	maps = vmm->stats.call[TP_CALL_MAP].calls;
	access = vmm->stats.call[TP_CALL_SET_ACCESS].calls;
	ok_rc(tp_vmm_map(vmm, a, c, NR), "%s: map the run at A", name);
	ok(vmm->stats.call[TP_CALL_MAP].calls == maps + 1 &&
	   vmm->stats.call[TP_CALL_SET_ACCESS].calls == access + 1 &&
	   vmm->stats.call[TP_CALL_MAP].units >= NR,
	   "%s: a run is one counted map and one set-access", name);
	ok_rc(put_bytes(vmm, a, src, NR * g), "%s: write the pattern through A",
	      name);
	ok_rc(tp_vmm_unmap(vmm, a, c, NR), "%s: unmap A", name);

	/* The same chunks, reversed, behind B. */
	for (i = 0; i < NR; i++)
		rev[i] = c[NR - 1 - i];
	ok_rc(tp_vmm_map(vmm, b, rev, NR), "%s: map the chunks reversed at B",
	      name);
	ok_rc(get_bytes(vmm, dst, b, NR * g), "%s: read B back", name);
	same = true;
	for (i = 0; i < NR; i++)
		same &= memcmp(dst + i * g, src + (NR - 1 - i) * g, g) == 0;
	ok(same, "%s: page i of B holds what page %d-i of A was given", name,
	   NR - 1);
	ok(vmm->stats.chunks_mapped == NR && vmm->stats.chunks_peak == NR,
	   "%s: %d chunks mapped, peak %d", name, NR, NR);
	ok_rc(tp_vmm_unmap(vmm, b, rev, NR), "%s: unmap B", name);
	tp_vmm_chunks_put(vmm, c, NR);

	/* 1 TiB of address space, one chunk mapped in its middle. */
	ok_rc(tp_vmm_reserve(vmm, (size_t)1 << 40, &huge),
	      "%s: reserve 1 TiB with no memory behind it", name);
	if (huge) {
		uintptr_t mid = huge + ((size_t)1 << 39);
		int ret;

		ret = tp_vmm_chunks_take(vmm, c, 1);
		if (!ret)
			ret = tp_vmm_map(vmm, mid, c, 1);
		if (!ret)
			ret = put_bytes(vmm, mid, src, g);
		memset(dst, 0, g);
		if (!ret)
			ret = get_bytes(vmm, dst, mid, g);
		ok(!ret && memcmp(dst, src, g) == 0,
		   "%s: a page in the middle of it holds data", name);
		if (!tp_vmm_unmap(vmm, mid, c, 1))
			tp_vmm_chunks_put(vmm, c, 1);
		ok_rc(tp_vmm_release(vmm, huge, (size_t)1 << 40),
		      "%s: release 1 TiB", name);
	} else {
		skip(2, "no 1 TiB reservation");
	}

	ok_rc(tp_vmm_release(vmm, a, NR * g) ?: tp_vmm_release(vmm, b, NR * g),
	      "%s: release A and B", name);
	ok(vmm->stats.ranges_reserved == 0 && vmm->stats.chunks_mapped == 0 &&
	   tp_vmm_chunks_free(vmm) == vmm->nr_chunks,
	   "%s: nothing reserved, mapped or taken", name);
	tp_vmm_host_free(vmm, src, NR * g);
	tp_vmm_host_free(vmm, dst, NR * g);
}

int main(void)
{
	static const char *const backends[] = { "host", "cuda", NULL };

	return vt_run(backends, PER_BACKEND, 64 << 10, NULL, 8, body);
}
