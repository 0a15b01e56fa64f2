/* SPDX-License-Identifier: MIT */
/*
 * pin-bench: what pinning host memory costs on a GPU, and what it holds
 * up. Host swap is pinned memory, obtained while a step runs; the question
 * is how fast each way of pinning is, and whether driver calls made on
 * another thread (the ones a training step makes: map, set access, unmap,
 * a copy queued, an event asked) wait while it runs.
 *
 *   pin-bench [MiB]        (default 512: the size pinned in each row)
 *
 * Rows, each the median of three:
 *   alloc      cuMemHostAlloc of the size
 *   register   mmap, every page written (touch: no driver call), then
 *              cuMemHostRegister
 *   reg-cold   cuMemHostRegister of untouched memory
 *   huge       as register, on transparent huge pages (MADV_HUGEPAGE)
 *   huge-cold  cuMemHostRegister of untouched huge-page memory
 *   unpin      cuMemFreeHost, or cuMemHostUnregister and munmap
 * Then, while another thread pins by each way, the longest and total time
 * this thread's driver calls took against their time with nothing pinned;
 * and while it only faults huge pages in ("fault": what pager.swap_ahead's
 * thread does, the registration left to the issuing thread).
 * Last, whether one async copy may span two pinned ranges that touch.
 *
 * First, on any machine: faulting the size in by 1, 2, 4 and 8 threads
 * (vmm.cuda.fault_threads; base/hostmem.h), no driver call.
 *
 * It loads the driver at run time, so it builds everywhere and says so
 * where there is no GPU.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cuda.h>

#include "base/hostmem.h"

#define CALLS(X)			\
	X(cuInit)			\
	X(cuDeviceGet)			\
	X(cuDevicePrimaryCtxRetain)	\
	X(cuCtxSetCurrent)		\
	X(cuGetErrorString)		\
	X(cuMemHostAlloc)		\
	X(cuMemFreeHost)		\
	X(cuMemHostRegister)		\
	X(cuMemHostUnregister)		\
	X(cuMemAddressReserve)		\
	X(cuMemAddressFree)		\
	X(cuMemCreate)			\
	X(cuMemRelease)			\
	X(cuMemMap)			\
	X(cuMemUnmap)			\
	X(cuMemSetAccess)		\
	X(cuMemAlloc)			\
	X(cuMemFree)			\
	X(cuMemsetD8Async)		\
	X(cuMemcpyDtoHAsync)		\
	X(cuStreamCreate)		\
	X(cuStreamSynchronize)		\
	X(cuEventCreate)		\
	X(cuEventRecord)		\
	X(cuEventQuery)

#include "bench/cuda-calls.h"

static CUcontext ctx;
static CUdevice dev;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void check(CUresult r, const char *what, int line)
{
	const char *s = "?";

	if (r == CUDA_SUCCESS)
		return;
	p_cuGetErrorString(r, &s);
	fprintf(stderr, "pin-bench: line %d: %s: %s\n", line, what, s);
	exit(1);
}
#define CK(call) check((call), #call, __LINE__)


static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median3(double *v)
{
	qsort(v, 3, sizeof(*v), cmp_d);
	return v[1];
}

/* --- ways to pin ------------------------------------------------------ */

/*
 * WAY_FAULT pins nothing: huge pages mapped and written, what the thread
 * preparing host swap ahead of need does (pager.swap_ahead); it is raced
 * only, the registration left to the issuing thread.
 */
enum way {
	WAY_ALLOC, WAY_REGISTER, WAY_REG_COLD, WAY_HUGE, WAY_HUGE_COLD,
	WAY_FAULT, NR_WAYS
};
static const char *const way_name[] = {
	"alloc", "register", "reg-cold", "huge", "huge-cold", "fault",
};

struct pinned {
	void *p;
	size_t len;
	enum way way;
	double touch_us, pin_us;
};

static void pin(struct pinned *pm, enum way way, size_t len)
{
	double t0;

	pm->way = way;
	pm->len = len;
	pm->touch_us = 0;
	if (way == WAY_ALLOC) {
		t0 = now_us();
		CK(p_cuMemHostAlloc(&pm->p, len, CU_MEMHOSTALLOC_PORTABLE));
		pm->pin_us = now_us() - t0;
		return;
	}
	pm->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pm->p == MAP_FAILED) {
		perror("pin-bench: mmap");
		exit(1);
	}
	t0 = now_us();
	if (way == WAY_HUGE || way == WAY_HUGE_COLD || way == WAY_FAULT)
		madvise(pm->p, len, MADV_HUGEPAGE);
	if (way == WAY_REGISTER || way == WAY_HUGE || way == WAY_FAULT)
		tp_hostmem_populate(pm->p, len);
	pm->touch_us = now_us() - t0;
	pm->pin_us = 0;
	if (way == WAY_FAULT)
		return;
	t0 = now_us();
	CK(p_cuMemHostRegister(pm->p, len, CU_MEMHOSTREGISTER_PORTABLE));
	pm->pin_us = now_us() - t0;
}

static double unpin(struct pinned *pm)
{
	double t0 = now_us();

	if (pm->way == WAY_ALLOC) {
		CK(p_cuMemFreeHost(pm->p));
	} else if (pm->way == WAY_FAULT) {
		munmap(pm->p, pm->len);
	} else {
		CK(p_cuMemHostUnregister(pm->p));
		munmap(pm->p, pm->len);
	}
	return now_us() - t0;
}

/* --- what another thread's pinning holds up --------------------------- */

struct pinner {
	enum way way;
	size_t len;
	volatile int started, done;
	struct pinned pm;
};

static void *pinner_main(void *arg)
{
	struct pinner *pn = arg;

	CK(p_cuCtxSetCurrent(ctx));
	if (pn->way == WAY_REGISTER || pn->way == WAY_HUGE) {
		/* Touched before the clock starts: only the register is raced. */
		pn->pm.p = mmap(NULL, pn->len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pn->way == WAY_HUGE)
			madvise(pn->pm.p, pn->len, MADV_HUGEPAGE);
		tp_hostmem_populate(pn->pm.p, pn->len);
		pn->pm.way = pn->way;
		pn->pm.len = pn->len;
		__atomic_store_n(&pn->started, 1, __ATOMIC_RELEASE);
		double t0 = now_us();
		CK(p_cuMemHostRegister(pn->pm.p, pn->len,
				       CU_MEMHOSTREGISTER_PORTABLE));
		pn->pm.pin_us = now_us() - t0;
	} else {
		__atomic_store_n(&pn->started, 1, __ATOMIC_RELEASE);
		pin(&pn->pm, pn->way, pn->len);
	}
	__atomic_store_n(&pn->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* One step's kinds of driver call, on a 2 MiB handle and a stream. */
struct issuer {
	CUdeviceptr va, dbuf;
	CUmemGenericAllocationHandle h;
	CUmemAccessDesc acc;
	CUstream s;
	CUevent ev;
	size_t gran;
};

enum { K_MAP, K_ACCESS, K_UNMAP, K_QUEUE, K_QUERY, NR_K };
static const char *const k_name[] = {
	"map", "set access", "unmap", "queue work", "event query",
};

struct lat {
	double max[NR_K], sum[NR_K];
	unsigned long n;
};

static void issue_once(struct issuer *is, struct lat *l)
{
	double t[NR_K + 1];
	CUresult r;

	t[0] = now_us();
	CK(p_cuMemMap(is->va, is->gran, 0, is->h, 0));
	t[1] = now_us();
	CK(p_cuMemSetAccess(is->va, is->gran, &is->acc, 1));
	t[2] = now_us();
	CK(p_cuMemUnmap(is->va, is->gran));
	t[3] = now_us();
	CK(p_cuMemsetD8Async(is->dbuf, 1, 1 << 20, is->s));
	CK(p_cuEventRecord(is->ev, is->s));
	t[4] = now_us();
	r = p_cuEventQuery(is->ev);
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
		CK(r);
	t[5] = now_us();
	for (int k = 0; k < NR_K; k++) {
		double d = t[k + 1] - t[k];

		l->sum[k] += d;
		if (d > l->max[k])
			l->max[k] = d;
	}
	l->n++;
}

static void issuer_init(struct issuer *is)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
	};

	is->gran = 2u << 20;
	is->acc.location = prop.location;
	is->acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(p_cuMemAddressReserve(&is->va, is->gran, 0, 0, 0));
	CK(p_cuMemCreate(&is->h, is->gran, &prop, 0));
	CK(p_cuMemAlloc(&is->dbuf, 1 << 20));
	CK(p_cuStreamCreate(&is->s, CU_STREAM_NON_BLOCKING));
	CK(p_cuEventCreate(&is->ev, CU_EVENT_DISABLE_TIMING));
}

static void print_lat(const char *what, const struct lat *l,
		      double window_us)
{
	printf("%-22s %6lu", what, l->n);
	for (int k = 0; k < NR_K; k++)
		printf(" %9.0f/%-6.1f", l->max[k],
		       l->n ? l->sum[k] / l->n : 0);
	printf(" %8.1f\n", window_us / 1e3);
}

/* This thread's calls while another pins @len by @way. */
static void race(struct issuer *is, enum way way, size_t len)
{
	struct pinner pn = { .way = way, .len = len };
	struct lat l = { 0 };
	pthread_t th;
	double t0;
	char what[32];

	pthread_create(&th, NULL, pinner_main, &pn);
	while (!__atomic_load_n(&pn.started, __ATOMIC_ACQUIRE))
		;
	t0 = now_us();
	while (!__atomic_load_n(&pn.done, __ATOMIC_ACQUIRE))
		issue_once(is, &l);
	pthread_join(th, NULL);
	snprintf(what, sizeof(what), "while %s", way_name[way]);
	print_lat(what, &l, now_us() - t0);
	CK(p_cuStreamSynchronize(is->s));
	unpin(&pn.pm);
}

/* --- one copy over two pinned ranges that touch ----------------------- */

static void straddle(void)
{
	size_t half = 64u << 20, n = 4u << 20;
	char *p = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CUdeviceptr d;
	CUstream s;
	CUresult r1, r2;
	const char *e1 = "ok", *e2 = "ok";

	memset(p, 0, 2 * half);
	CK(p_cuMemHostRegister(p, half, CU_MEMHOSTREGISTER_PORTABLE));
	CK(p_cuMemHostRegister(p + half, half, CU_MEMHOSTREGISTER_PORTABLE));
	CK(p_cuMemAlloc(&d, n));
	CK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	r1 = p_cuMemcpyDtoHAsync(p + half - n / 2, d, n, s);
	r2 = p_cuMemcpyDtoHAsync(p + half - n, d, n, s);
	if (r1)
		p_cuGetErrorString(r1, &e1);
	if (r2)
		p_cuGetErrorString(r2, &e2);
	p_cuStreamSynchronize(s);
	printf("\none async copy of 4 MiB into two registered ranges that touch: %s (%d)\n",
	       e1, (int)r1);
	printf("the same copy inside one of them:                            %s (%d)\n",
	       e2, (int)r2);
	CK(p_cuMemHostUnregister(p));
	CK(p_cuMemHostUnregister(p + half));
	CK(p_cuMemFree(d));
	munmap(p, 2 * half);
}

/* The size faulted in by 1, 2, 4 and 8 threads: median of 3. */
static void fault_threads(size_t len)
{
	printf("faulting %zu MiB in by threads, median of 3 (ms; GB/s)\n",
	       len >> 20);
	for (unsigned n = 1; n <= 8; n *= 2) {
		double t[3];

		for (int r = 0; r < 3; r++) {
			double t0 = now_us();
			void *p = tp_hostmem_map(len, n);

			t[r] = now_us() - t0;
			if (!p) {
				printf("%u threads: %zu MiB cannot be mapped\n",
				       n, len >> 20);
				return;
			}
			tp_hostmem_unmap(p, len);
		}
		double m = median3(t);

		printf("%-10u %9.1f %9.2f\n", n, m / 1e3, len / m / 1e3);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 512;
	size_t len = mib << 20;
	struct issuer is;
	struct lat base = { 0 };
	double t0;

	fault_threads(len);
	if (cuda_calls_load("pin-bench")) {
		printf("pin-bench: no CUDA driver here (libcuda.so.1): nothing to measure\n");
		return 0;
	}
	CK(p_cuInit(0));
	CK(p_cuDeviceGet(&dev, 0));
	CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(p_cuCtxSetCurrent(ctx));

	printf("pinning %zu MiB, median of 3 (ms; GB/s)\n", mib);
	printf("%-10s %9s %9s %9s %9s\n", "way", "touch", "pin", "GB/s", "unpin");
	for (int w = 0; w < WAY_FAULT; w++) {
		double touch[3], p[3], u[3];

		for (int r = 0; r < 3; r++) {
			struct pinned pm;

			pin(&pm, (enum way)w, len);
			touch[r] = pm.touch_us;
			p[r] = pm.pin_us;
			u[r] = unpin(&pm);
		}
		double pm_us = median3(p), tu = median3(touch);

		printf("%-10s %9.1f %9.1f %9.2f %9.1f\n", way_name[w], tu / 1e3,
		       pm_us / 1e3, len / (pm_us + tu) / 1e3, median3(u) / 1e3);
	}

	issuer_init(&is);
	for (int i = 0; i < 20; i++)	/* warm */
		issue_once(&is, &base);
	memset(&base, 0, sizeof(base));
	t0 = now_us();
	while (now_us() - t0 < 200e3)
		issue_once(&is, &base);
	printf("\nthis thread's driver calls while another pins %zu MiB: rounds, then max/mean us of each, window ms\n",
	       mib);
	printf("%-22s %6s", "", "rounds");
	for (int k = 0; k < NR_K; k++)
		printf(" %16s", k_name[k]);
	printf(" %8s\n", "ms");
	print_lat("nothing pinned", &base, now_us() - t0);
	race(&is, WAY_ALLOC, len);
	race(&is, WAY_REGISTER, len);
	race(&is, WAY_REG_COLD, len);
	race(&is, WAY_HUGE, len);
	race(&is, WAY_FAULT, len);
	straddle();
	return 0;
}
