/* SPDX-License-Identifier: MIT */
/*
 * What the pager tests share: a context on the backend under test (host,
 * or cuda with TPAGER_TEST_BACKEND=cuda, skipped where none opens), the
 * seed (TPAGER_TEST_SEED), a small generator and seeded patterns.
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

static inline const char *pt_backend(void)
{
	const char *b = getenv("TPAGER_TEST_BACKEND");

	return b && *b ? b : "host";
}

/*
 * A context on the backend under test with 64K chunks and @fmt options.
 * cuda that does not open skips the whole program.
 */
__attribute__((format(printf, 1, 2)))
static inline struct tp_ctx *pt_ctx(const char *fmt, ...)
{
	char opts[512], extra[384] = "";
	struct tp_ctx *ctx;
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	snprintf(opts, sizeof(opts), "vmm.backend=%s,vmm.chunk_size=64K%s%s",
		 pt_backend(), *extra ? "," : "", extra);
	ctx = tp_ctx_create(opts);
	if (!ctx && strcmp(pt_backend(), "host"))
		plan_skip_all("backend %s does not open: %s", pt_backend(),
			      strerror(errno));
	if (!ctx)
		bail_out("tp_ctx_create(%s): %s", opts, strerror(errno));
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
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
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
