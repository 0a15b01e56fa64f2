/* SPDX-License-Identifier: MIT */
/*
 * What the pager tests share: a context on the backend under test (host
 * by default; TPAGER_TEST_BACKEND=cuda runs the same tests on the GPU),
 * the seed (TPAGER_TEST_SEED), a small generator and seeded patterns.
 */
#ifndef TP_TESTS_PAGER_UTIL_H
#define TP_TESTS_PAGER_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

static inline const char *pt_backend(void)
{
	const char *b = getenv("TPAGER_TEST_BACKEND");

	return b && *b ? b : "host";
}

/*
 * vmm.mode=contiguous is a host and sim baseline: the cuda backend refuses
 * it (ENOTSUP), so its tests skip there, saying so.
 */
static inline void pt_skip_unless_contiguous_backend(void)
{
	if (!strcmp(pt_backend(), "cuda"))
		plan_skip_all("vmm.mode=contiguous is for host and sim, not cuda");
}

static inline struct tp_ctx *pt_open(const char *extra)
{
	char opts[640];

	/* Rescues off: the tests see the copies and recomputes they
	 * check (tests/pager-rescue turns them on). */
	snprintf(opts, sizeof(opts),
		 "vmm.backend=%s,vmm.chunk_size=64K,pager.rescue=0%s%s",
		 pt_backend(), *extra ? "," : "", extra);
	return tp_ctx_create(opts);
}

/*
 * The chunk size of the backend under test. The first call opens it once,
 * before plan_tests(): the backend must open.
 */
static inline size_t pt_probe(void)
{
	static size_t chunk;
	struct tp_stats st;
	struct tp_ctx *ctx;

	if (chunk)
		return chunk;
	ctx = pt_open("");
	/* A backend asked for by name must open: a GPU runner that lost
	 * its device fails rather than passing by skipping. */
	if (!ctx)
		bail_out("backend %s does not open: %s", pt_backend(),
			 strerror(errno));
	tp_stats_get(ctx, &st);
	chunk = st.chunk_size;
	tp_ctx_destroy(ctx);
	/* Said, so that a harness can tell which backend ran the test. */
	diag("backend %s, chunk %zu bytes", pt_backend(), chunk);
	return chunk;
}

/*
 * A context on the backend under test (64K chunks on host) with @fmt
 * options, where a size written "<n>C" means n chunks, so that the same
 * test runs with the device's granularity on cuda.
 */
__attribute__((format(printf, 1, 2)))
static inline struct tp_ctx *pt_ctx(const char *fmt, ...)
{
	char raw[384] = "", extra[384] = "";
	size_t chunk = pt_probe(), o = 0;
	struct tp_ctx *ctx;
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(raw, sizeof(raw), fmt, ap);
		va_end(ap);
	}
	for (const char *p = raw; *p && o + 24 < sizeof(extra);) {
		char *end;
		unsigned long long n;

		if (p > raw && p[-1] == '=' && *p >= '0' && *p <= '9') {
			n = strtoull(p, &end, 10);
			if (*end == 'C') {
				o += snprintf(extra + o, sizeof(extra) - o, "%llu",
					      n * (unsigned long long)chunk);
				p = end + 1;
				continue;
			}
		}
		extra[o++] = *p++;
	}
	extra[o] = 0;
	ctx = pt_open(extra);
	if (!ctx)
		bail_out("tp_ctx_create(%s): %s", extra, strerror(errno));
	return ctx;
}

static inline uint64_t pt_seed(void)
{
	const char *s = getenv("TPAGER_TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 20261122;

	diag("seed %" PRIu64 " (set TPAGER_TEST_SEED to repeat)", seed);
	return seed;
}

static inline uint64_t pt_rand(uint64_t *s)
{
	return tt_rand(s);
}

static inline void pt_fill(void *p, size_t len, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t s = seed, r = 0;

	for (size_t i = 0; i < len; i++) {
		if (!(i & 7))
			r = pt_rand(&s);
		b[i] = (unsigned char)(r >> ((i & 7) * 8));
	}
}

static inline size_t pt_chunk(struct tp_ctx *ctx)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	return st.chunk_size;
}

#endif /* TP_TESTS_PAGER_UTIL_H */
