/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver loaded at run time, for the benches that measure it
 * (pin-bench, enqueue-bench), so that one build runs where there is no
 * driver and says so. Include after defining CALLS(X), the entry points
 * the bench calls: each gets a pointer p_<name>, and cuda_calls_load()
 * looks every one up by the versioned name cuda.h maps it to
 * (cuMemAlloc -> cuMemAlloc_v2). Return: 0, or -1 (no driver, or an
 * entry point missing, said on standard error).
 */
#ifndef TP_BENCH_CUDA_CALLS_H
#define TP_BENCH_CUDA_CALLS_H

#include <dlfcn.h>
#include <stdio.h>

#include <cuda.h>

#define CUDA_CALL_DECL(n) static __typeof__(&n) p_##n;
CALLS(CUDA_CALL_DECL)

#define CUDA_CALL_STR_(x) #x
#define CUDA_CALL_STR(x) CUDA_CALL_STR_(x)
#define CUDA_CALL_LOAD(n) \
	p_##n = (__typeof__(p_##n))dlsym(lib, CUDA_CALL_STR(n)); \
	if (!p_##n) { \
		fprintf(stderr, "%s: no %s\n", prog, #n); \
		return -1; \
	}

static int cuda_calls_load(const char *prog)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	if (!lib)
		return -1;
	CALLS(CUDA_CALL_LOAD)
	return 0;
}

#endif /* TP_BENCH_CUDA_CALLS_H */
