/* SPDX-License-Identifier: MIT */
/*
 * What the vmm tests share: opening a backend by name, running one test
 * body against every backend it applies to (cuda when a device opens or
 * TPAGER_TEST_BACKEND=cuda, else a TAP skip with the reason), seeded
 * random data.
 */
#ifndef TP_TESTS_VMM_UTIL_H
#define TP_TESTS_VMM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

/*
 * Open backend @name ("host", "sim", "cuda") with @chunk bytes per chunk
 * (ignored by cuda) and extra "key=value,..." options (may be NULL). On
 * failure NULL, with the reason in @why.
 */
struct tp_vmm *vt_open(const char *name, size_t chunk, const char *opts,
		       char *why, size_t whylen);

/* One run of a test body: a backend and extra options (may be NULL). */
struct vt_case {
	const char *backend;
	const char *opts;
};

/*
 * Plan @per_backend checks for each case of @cases (ended by a NULL
 * backend) and run @body on each, as vt_run() does.
 */
int vt_run_cases(const struct vt_case *cases, unsigned per_backend,
		 size_t chunk, size_t pool_chunks,
		 void (*body)(struct tp_vmm *vmm, const char *name));

/*
 * Plan @per_backend checks for each of @names (NULL-terminated) and run
 * @body on each backend that opens, with a pool of @pool_chunks chunks.
 * "cuda" that does not open is skipped with the reason unless
 * TPAGER_TEST_BACKEND=cuda, where it fails. Other backends must open.
 * Return exit_status().
 */
int vt_run(const char *const *names, unsigned per_backend, size_t chunk,
	   const char *opts, size_t pool_chunks,
	   void (*body)(struct tp_vmm *vmm, const char *name));

/* The seed (TPAGER_TEST_SEED or a fixed default), printed once. */
uint64_t vt_seed(void);
/* Fill @p with @len bytes of a stream seeded with @seed. */
void vt_fill(void *p, size_t len, uint64_t seed);

#endif /* TP_TESTS_VMM_UTIL_H */
