/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "ctx/ctx.h"
#include "tests/tap.h"
#include "tests/vmm-util.h"
#ifdef TP_HAVE_CUDA
#include "vmm/backend_cuda.h"
#endif

struct tp_vmm *vt_open(const char *name, size_t chunk, const char *opts,
		       char *why, size_t whylen)
{
	struct tp_vmm_conf vc;
	struct tp_conf conf;
	struct tp_vmm *vmm;
	char size[32];
	int ret;

#ifdef TP_HAVE_CUDA
	/* A stand-in driver (tests/vmm-cuda-fake.sh). */
	if (getenv("TPAGER_TEST_CUDA_LIBRARY"))
		tp_vmm_cuda_library = getenv("TPAGER_TEST_CUDA_LIBRARY");
#endif
	tp_conf_defaults(&conf);
	snprintf(size, sizeof(size), "%zu", chunk);
	ret = tp_conf_set(&conf, "vmm.backend", name, "test", 0);
	if (!ret)
		ret = tp_conf_set(&conf, "vmm.chunk_size", size, "test", 0);
	if (!ret && opts)
		ret = tp_conf_apply_opts(&conf, opts, "test");
	if (ret) {
		snprintf(why, whylen, "bad test configuration: %s", strerror(-ret));
		return NULL;
	}
	tp_ctx_vmm_conf(&conf, &vc);
	vmm = tp_vmm_open(&vc);
	if (!vmm)
		snprintf(why, whylen, "%s backend does not open: %s", name,
			 strerror(errno));
	return vmm;
}

int vt_run_cases(const struct vt_case *cases, unsigned per_backend,
		 size_t chunk, size_t pool_chunks,
		 void (*body)(struct tp_vmm *vmm, const char *name))
{
	const char *want = getenv("TPAGER_TEST_BACKEND");
	unsigned n = 0, i;

	while (cases[n].backend)
		n++;
	plan_tests(n * per_backend);
	vt_seed();
	for (i = 0; i < n; i++) {
		const char *name = cases[i].backend;
		struct tp_vmm *vmm;
		char why[256];
		int ret;

		vmm = vt_open(name, chunk, cases[i].opts, why, sizeof(why));
		if (!vmm) {
			bool required = strcmp(name, "cuda") != 0 ||
					(want && strcmp(want, "cuda") == 0);

			if (required) {
				ok(0, "%s", why);
				skip(per_backend - 1, "%s did not open", name);
			} else {
				skip(per_backend, "%s", why);
			}
			continue;
		}
		diag("backend %s, chunk %zu bytes%s%s", name, vmm->granularity,
		     cases[i].opts ? ", " : "",
		     cases[i].opts ? cases[i].opts : "");
		ret = tp_vmm_pool_create(vmm, (uint64_t)pool_chunks * vmm->granularity);
		if (ret) {
			ok_rc(ret, "%s: pool of %zu chunks", name, pool_chunks);
			skip(per_backend - 1, "no pool");
		} else {
			body(vmm, name);
		}
		tp_vmm_close(vmm);
	}
	return exit_status();
}

int vt_run(const char *const *names, unsigned per_backend, size_t chunk,
	   const char *opts, size_t pool_chunks,
	   void (*body)(struct tp_vmm *vmm, const char *name))
{
	struct vt_case cases[8];
	unsigned n;

	for (n = 0; names[n] && n < 7; n++) {
		cases[n].backend = names[n];
		cases[n].opts = opts;
	}
	cases[n].backend = NULL;
	return vt_run_cases(cases, per_backend, chunk, pool_chunks, body);
}

uint64_t vt_seed(void)
{
	static uint64_t seed;
	const char *s;

	if (seed)
		return seed;
	s = getenv("TPAGER_TEST_SEED");
	seed = s ? strtoull(s, NULL, 0) : 0x7470616765720001ull;
	if (!seed)
		seed = 1;
	diag("seed %#llx (TPAGER_TEST_SEED to change)", (unsigned long long)seed);
	return seed;
}

void vt_fill(void *p, size_t len, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	/* xorshift64*: cheap, and different seeds give different bytes. */
	for (i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
		}
		b[i] = (unsigned char)((x * 0x2545f4914f6cdd1dull) >> (8 * (i % 8)));
	}
}
