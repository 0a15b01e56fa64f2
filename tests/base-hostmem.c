/* SPDX-License-Identifier: MIT */
/*
 * Host memory faulted in by several threads (base/hostmem.h): whatever
 * the thread count and length (a huge page or less, not a multiple of
 * one, more threads than slices), every page is resident once it
 * returns (mincore), reads zero and keeps what is written to it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hostmem.h"
#include "tests/tap.h"

#define MB	(1ul << 20)

/* Pages of [@p, @p + @len) not resident, or -1 where mincore fails. */
static long not_resident(void *p, size_t len, size_t page)
{
	size_t n = (len + page - 1) / page;
	unsigned char *v = malloc(n);
	long missing = 0;

	if (!v || mincore(p, len, v)) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		missing += !(v[i] & 1);
	free(v);
	return missing;
}

int main(void)
{
	static const struct { size_t len; unsigned threads; } cases[] = {
		{ 4096, 4 }, { 2 * MB, 1 }, { 2 * MB, 8 }, { 7 * MB + 4096, 3 },
		{ 33 * MB, 4 }, { 64 * MB, 0 }, { 64 * MB, 64 }, { 5 * MB, 200 },
		{ 128 * MB + 4096, 64 }, { 130 * MB, 65 },
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	plan_tests((int)n);
	for (size_t i = 0; i < n; i++) {
		size_t len = cases[i].len;
		unsigned char *p = tp_hostmem_map(len, cases[i].threads);
		long missing;
		size_t nonzero = 0, lost = 0;

		if (!p)
			bail_out("map %zu bytes: %s", len, strerror(errno));
		missing = not_resident(p, len, page);
		for (size_t off = 0; off < len; off += page / 2)
			nonzero += p[off] != 0;
		for (size_t off = 0; off < len; off += page)
			p[off] = (unsigned char)(off / page * 7 + 1);
		for (size_t off = 0; off < len; off += page)
			lost += p[off] != (unsigned char)(off / page * 7 + 1);
		ok(missing == 0 && !nonzero && !lost,
		   "%zu bytes by %u threads: %ld pages not resident, %zu read non-zero, %zu lost a write",
		   len, cases[i].threads, missing, nonzero, lost);
		tp_hostmem_unmap(p, len);
	}
	return exit_status();
}
