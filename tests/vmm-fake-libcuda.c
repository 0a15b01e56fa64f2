/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libcuda.so.1, for tests only: the driver entry points the
 * cuda backend uses, implemented on host memory, so that its code (entry
 * point lookup, per-handle map and unmap, access, streams, events, error
 * translation) runs where there is no GPU. It enforces the rules of the
 * real driver (measured on an H200) that the backend must respect: a
 * handle is a whole number of granules and maps whole (offset 0, its own
 * size: anything else is CUDA_ERROR_NOT_SUPPORTED or INVALID_VALUE) onto
 * unmapped pages of a reservation; cuMemUnmap covers whole mappings (one
 * or several) and never splits one; access is set only on mapped pages;
 * a copy's host range lies within one pinned allocation or none; a
 * copy's device range is checked when the copy is enqueued, as the real
 * driver does: a page not mapped there is CUDA_ERROR_INVALID_VALUE at
 * the call, whatever the stream would have waited for first.
 * It counts what the real driver charges for: per handle a call touches,
 * not per call nor per byte (fake_cuda_counts()).
 *
 * Copies are done at once (every stream is trivially in order) and an
 * event has completed once the waits on its stream before it are done:
 * cuStreamWaitValue32 puts one on a stream (on a word of pinned host
 * memory, through its device pointer), which holds the events recorded
 * after it, and the streams made to wait for those, until the word
 * reaches the value; a sync that would wait for ever (10 s here) fails
 * with CUDA_ERROR_LAUNCH_TIMEOUT instead of hanging the test. No kernel
 * runs here, so none is held. FAKE_CUDA_MAP_DELAY_US makes each cuMemMap
 * that long, and fake_cuda_hold_maps() stops every cuMemMap until
 * released, so that a copy issued before a map another thread makes
 * finds the memory unmapped, as it would on the device. Device memory is
 * one memfd per handle. As on a GPU, it is not host memory: the reserved addresses stay PROT_NONE, so a
 * program that reads or writes a device address from the host faults
 * here as it would there; copies reach the handle's memfd through the
 * mapping's own descriptor.
 *
 * One file, past the usual length: it is one shared object standing in
 * for another, each entry point a few lines over the same tables.
 */
#include "config.h"

#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FAKE_GRAN	(2u << 20)
#define FAKE_TOTAL	(1ull << 30)
#define MAX_MAPS	4096

#define API __attribute__((visibility("default")))

/* The library's driver thread calls in too: one lock over the tables. */
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

/* Live mappings: where, how long, the handle's memory, whether accessible. */
static struct {
	uintptr_t va;
	size_t len;
	int fd;			/* a duplicate: the handle may be released */
	int rw;
} maps[MAX_MAPS];
static int nr_maps;

/* The size of each live handle, by its memfd. */
#define MAX_FDS	65536
static size_t handle_size[MAX_FDS];


/* Test hooks, found with dlsym. */
API void fake_cuda_counts(unsigned long out[5]);
API void fake_cuda_fail_maps(unsigned n);
API void fake_cuda_hold_maps(int hold);
API int fake_cuda_mapped(uintptr_t va);

/* Per-handle charges, as the driver bills them. */
static unsigned long charged_maps, charged_access, charged_unmaps;
static unsigned long charged_creates, charged_releases;

/*
 * Test hook: what the driver was charged for so far, one count per
 * handle each call touched (map, set access, unmap, create, release).
 */
API void fake_cuda_counts(unsigned long out[5])
{
	pthread_mutex_lock(&fake_lock);
	out[0] = charged_maps;
	out[1] = charged_access;
	out[2] = charged_unmaps;
	out[3] = charged_creates;
	out[4] = charged_releases;
	pthread_mutex_unlock(&fake_lock);
}

static int find_map(uintptr_t va)
{
	int i;

	for (i = 0; i < nr_maps; i++)
		if (va >= maps[i].va && va < maps[i].va + maps[i].len)
			return i;
	return -1;
}

API CUresult cuInit(unsigned int flags) { return CUDA_SUCCESS; }

API CUresult cuGetErrorString(CUresult error, const char **str)
{
	*str = error == CUDA_ERROR_INVALID_VALUE ? "invalid argument (fake)" :
						   "error (fake)";
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int *count) { *count = 1; return CUDA_SUCCESS; }

API CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return CUDA_SUCCESS;
}

static int ctx_token;

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	*pctx = (CUcontext)&ctx_token;
	return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return CUDA_SUCCESS; }
API CUresult cuCtxSetCurrent(CUcontext ctx) { return CUDA_SUCCESS; }

API CUresult cuMemGetInfo(size_t *free_b, size_t *total)
{
	*free_b = *total = FAKE_TOTAL;
	return CUDA_SUCCESS;
}

API CUresult cuMemGetAllocationGranularity(size_t *g,
					    const CUmemAllocationProp *prop,
					    CUmemAllocationGranularity_flags o)
{
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	*g = FAKE_GRAN;
	return CUDA_SUCCESS;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
				 CUdeviceptr addr, unsigned long long flags)
{
	uintptr_t base, start;
	void *p;

	if (!size || size % FAKE_GRAN || (align && align % FAKE_GRAN))
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap(NULL, size + FAKE_GRAN, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	base = (uintptr_t)p;
	start = (base + FAKE_GRAN - 1) & ~(uintptr_t)(FAKE_GRAN - 1);
	if (start > base)
		munmap(p, start - base);
	munmap((void *)(start + size), base + FAKE_GRAN - start);
	*ptr = (CUdeviceptr)start;
	return CUDA_SUCCESS;
}

static CUresult locked_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	int i;

	for (i = 0; i < nr_maps; i++)
		if (maps[i].va < ptr + size && maps[i].va + maps[i].len > ptr)
			return CUDA_ERROR_INVALID_VALUE;	/* still mapped */
	munmap((void *)ptr, size);
	return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemAddressFree(ptr, size);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
			 const CUmemAllocationProp *prop,
			 unsigned long long flags)
{
	int fd;

	if (!size || size % FAKE_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	fd = memfd_create("fake-cuda", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (fd >= MAX_FDS || ftruncate(fd, (off_t)size)) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	handle_size[fd] = size;
	charged_creates++;
	*h = (CUmemGenericAllocationHandle)fd + 1;
	return CUDA_SUCCESS;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
			 const CUmemAllocationProp *prop,
			 unsigned long long flags)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemCreate(h, size, prop, flags);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemRelease(CUmemGenericAllocationHandle h)
{
	int fd = (int)(h - 1);

	if (fd < 0 || fd >= MAX_FDS || !handle_size[fd])
		return CUDA_ERROR_INVALID_HANDLE;
	handle_size[fd] = 0;
	charged_releases++;
	close(fd);
	return CUDA_SUCCESS;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemRelease(h);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		      CUmemGenericAllocationHandle h, unsigned long long flags)
{
	int fd = (int)(h - 1);
	uintptr_t va;
	void *p;

	if (fd < 0 || fd >= MAX_FDS || !handle_size[fd])
		return CUDA_ERROR_INVALID_HANDLE;
	/* A handle maps whole: no offset into it, no part of it. */
	if (offset || size != handle_size[fd])
		return CUDA_ERROR_NOT_SUPPORTED;
	if (ptr % FAKE_GRAN || nr_maps == MAX_MAPS)
		return CUDA_ERROR_INVALID_VALUE;
	for (va = ptr; va < ptr + size; va += FAKE_GRAN)
		if (find_map(va) >= 0)
			return CUDA_ERROR_INVALID_VALUE;
	/* Held as the reservation was, PROT_NONE: the host never sees it. */
	p = mmap((void *)ptr, size, PROT_NONE, MAP_FIXED | MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_INVALID_VALUE;
	maps[nr_maps].fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (maps[nr_maps].fd < 0) {
		mmap(p, size, PROT_NONE,
		     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	maps[nr_maps].va = ptr;
	maps[nr_maps].len = size;
	maps[nr_maps].rw = 0;
	nr_maps++;
	charged_maps++;
	return CUDA_SUCCESS;
}

/* Test hook: the next @n maps fail, as a device out of resources. */
static unsigned maps_to_fail;

API void fake_cuda_fail_maps(unsigned n)
{
	pthread_mutex_lock(&fake_lock);
	maps_to_fail = n;
	pthread_mutex_unlock(&fake_lock);
}

/* Test hook: every cuMemMap waits while maps are held. */
static pthread_cond_t maps_cond = PTHREAD_COND_INITIALIZER;
static int maps_held;

API void fake_cuda_hold_maps(int hold)
{
	pthread_mutex_lock(&fake_lock);
	maps_held = hold;
	pthread_cond_broadcast(&maps_cond);
	pthread_mutex_unlock(&fake_lock);
}

/* Test hook: the handle mapped at @va (its memfd + 1), or 0. */
API int fake_cuda_mapped(uintptr_t va)
{
	int i, fd = 0;

	pthread_mutex_lock(&fake_lock);
	i = find_map(va);
	if (i >= 0) {
		struct stat a, b;

		/* The map holds a duplicate: find the handle by its file. */
		fstat(maps[i].fd, &a);
		for (int h = 0; h < MAX_FDS && !fd; h++)
			if (handle_size[h] && !fstat(h, &b) &&
			    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
				fd = h + 1;
	}
	pthread_mutex_unlock(&fake_lock);
	return fd;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		      CUmemGenericAllocationHandle h, unsigned long long flags)
{
	static long delay_us = -1;
	CUresult r;

	if (delay_us < 0) {
		const char *e = getenv("FAKE_CUDA_MAP_DELAY_US");

		delay_us = e ? atol(e) : 0;
	}
	if (delay_us > 0)
		usleep((useconds_t)delay_us);
	pthread_mutex_lock(&fake_lock);
	while (maps_held)
		pthread_cond_wait(&maps_cond, &fake_lock);
	if (maps_to_fail) {
		maps_to_fail--;
		pthread_mutex_unlock(&fake_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = locked_cuMemMap(ptr, size, offset, h, flags);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemSetAccess(CUdeviceptr ptr, size_t size,
			    const CUmemAccessDesc *desc, size_t count)
{
	uintptr_t va;

	if (count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	for (va = ptr; va < ptr + size; va += FAKE_GRAN)
		if (find_map(va) < 0)
			return CUDA_ERROR_INVALID_VALUE;
	/* Charged once per mapping (handle) the range covers. The device
	 * may then use it; the host still may not. */
	for (va = ptr; va < ptr + size;) {
		int i = find_map(va);

		charged_access++;
		maps[i].rw = desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		va = maps[i].va + maps[i].len;
	}
	return CUDA_SUCCESS;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			    const CUmemAccessDesc *desc, size_t count)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemSetAccess(ptr, size, desc, count);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uintptr_t va, end = ptr + size;
	size_t len;
	int i;

	/* Whole mappings only, back to back: never part of one. */
	for (va = ptr; va < end; va += maps[i].len) {
		i = find_map(va);
		if (i < 0 || maps[i].va != va || va + maps[i].len > end)
			return CUDA_ERROR_INVALID_VALUE;
	}
	for (va = ptr; va < end; va += len) {
		i = find_map(va);
		len = maps[i].len;
		mmap((void *)va, len, PROT_NONE,
		     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
		close(maps[i].fd);
		charged_unmaps++;
		maps[i] = maps[--nr_maps];
	}
	return CUDA_SUCCESS;
}

API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemUnmap(ptr, size);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

/*
 * Pinned host memory: each allocation its own mmap, so that two may touch
 * as they do on a GPU machine. A copy's host range may lie in pageable
 * memory or inside one pinned allocation, not across two: the driver
 * refuses that with CUDA_ERROR_INVALID_VALUE.
 */
#define MAX_HOSTS	4096
static struct {
	char *p;
	size_t len;
	int registered;		/* by cuMemHostRegister, not allocated */
} hosts[MAX_HOSTS];
static int nr_hosts;

API CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	void *p;

	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&fake_lock);
	if (nr_hosts == MAX_HOSTS) {
		pthread_mutex_unlock(&fake_lock);
		munmap(p, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	hosts[nr_hosts].p = p;
	hosts[nr_hosts].len = size;
	hosts[nr_hosts++].registered = 0;
	pthread_mutex_unlock(&fake_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

/* Pinned memory the device reads at the same address (unified addressing). */
API CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p,
				       unsigned int flags)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < nr_hosts; i++)
		if ((char *)p >= hosts[i].p &&
		    (char *)p < hosts[i].p + hosts[i].len) {
			*d = (CUdeviceptr)p;
			r = CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&fake_lock);
	return r;
}

/*
 * Forget the pinned range at @p, allocated (and unmapped here) or
 * registered as @registered says; @absent when there is none such.
 */
static CUresult host_forget(void *p, int registered, CUresult absent)
{
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < nr_hosts; i++)
		if (hosts[i].p == p && hosts[i].registered == registered) {
			if (!registered)
				munmap(p, hosts[i].len);
			hosts[i] = hosts[--nr_hosts];
			pthread_mutex_unlock(&fake_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&fake_lock);
	return absent;
}

API CUresult cuMemFreeHost(void *p)
{
	return host_forget(p, 0, CUDA_ERROR_INVALID_VALUE);
}

/* Host memory the caller mapped, pinned as it is (page-aligned). */
API CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	CUresult r = CUDA_SUCCESS;

	if (!p || !size || (uintptr_t)p % 4096)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < nr_hosts && !r; i++)
		if ((char *)p < hosts[i].p + hosts[i].len &&
		    (char *)p + size > hosts[i].p)
			r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (!r && nr_hosts == MAX_HOSTS)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		hosts[nr_hosts].p = p;
		hosts[nr_hosts].len = size;
		hosts[nr_hosts++].registered = 1;
	}
	pthread_mutex_unlock(&fake_lock);
	return r;
}

API CUresult cuMemHostUnregister(void *p)
{
	return host_forget(p, 1, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

/* Whether [@h, @h + @len) is pageable or inside one pinned allocation. */
static int host_range_ok(const char *h, size_t len)
{
	for (int i = 0; i < nr_hosts; i++) {
		const char *lo = hosts[i].p, *hi = lo + hosts[i].len;

		if (h >= lo && h < hi)
			return len <= (size_t)(hi - h);
		if (h < lo && h + len > lo)
			return 0;	/* pageable running into pinned */
	}
	return 1;
}

/*
 * Copy between host memory @host and device addresses [@d, @d + @len),
 * which must be mapped with access set, through each mapping's memfd.
 */
static CUresult copy_dev(CUdeviceptr d, void *host, size_t len, int to_dev)
{
	uintptr_t va;
	char *h = host;

	if (!host_range_ok(h, len))
		return CUDA_ERROR_INVALID_VALUE;
	/* Checked at the enqueue: an address not mapped is refused. */
	for (va = d & ~(uintptr_t)(FAKE_GRAN - 1); va < d + len; va += FAKE_GRAN)
		if (find_map(va) < 0)
			return CUDA_ERROR_INVALID_VALUE;
	/* Mapped without access: the device faults running it. */
	for (va = d & ~(uintptr_t)(FAKE_GRAN - 1); va < d + len; va += FAKE_GRAN)
		if (!maps[find_map(va)].rw)
			return CUDA_ERROR_ILLEGAL_ADDRESS;
	while (len) {
		int i = find_map(d);
		size_t off = d - maps[i].va, n = maps[i].len - off;
		ssize_t done;

		if (n > len)
			n = len;
		done = to_dev ? pwrite(maps[i].fd, h, n, (off_t)off) :
				pread(maps[i].fd, h, n, (off_t)off);
		if (done != (ssize_t)n)
			return CUDA_ERROR_UNKNOWN;
		d += n;
		h += n;
		len -= n;
	}
	return CUDA_SUCCESS;
}

static CUresult locked_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t len,
			       CUstream s)
{
	return copy_dev(src, dst, len, 0);
}

API CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t len,
			       CUstream s)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemcpyDtoHAsync(dst, src, len, s);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

static CUresult locked_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t len,
			       CUstream s)
{
	return copy_dev(dst, (void *)src, len, 1);
}

API CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t len,
			       CUstream s)
{
	CUresult r;

	pthread_mutex_lock(&fake_lock);
	r = locked_cuMemcpyHtoDAsync(dst, src, len, s);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

/*
 * What holds a stream's later work: cuStreamWaitValue32's waits not done
 * yet, each until (int32_t)(*word - value) >= 0. A stream and an event
 * recorded on it hold the waits before them.
 */
#define MAX_WAITS	16
struct fake_waits {
	int nr;
	struct {
		const volatile uint32_t *word;
		uint32_t value;
	} w[MAX_WAITS];
};

static int wait_done(const struct fake_waits *ws, int i)
{
	return (int32_t)(__atomic_load_n(ws->w[i].word, __ATOMIC_ACQUIRE) -
			 ws->w[i].value) >= 0;
}

/* Drop the waits done. Locked. */
static void waits_prune(struct fake_waits *ws)
{
	int i, k = 0;

	for (i = 0; i < ws->nr; i++)
		if (!wait_done(ws, i))
			ws->w[k++] = ws->w[i];
	ws->nr = k;
}

/* @to holds @from's waits too. Locked. */
static CUresult waits_add(struct fake_waits *to, const struct fake_waits *from)
{
	waits_prune(to);
	for (int i = 0; i < from->nr; i++) {
		if (wait_done(from, i))
			continue;
		if (to->nr == MAX_WAITS)
			return CUDA_ERROR_OUT_OF_MEMORY;
		to->w[to->nr++] = from->w[i];
	}
	return CUDA_SUCCESS;
}

/* Whether @ws holds nothing back any more. */
static int waits_clear(struct fake_waits *ws)
{
	int clear;

	pthread_mutex_lock(&fake_lock);
	waits_prune(ws);
	clear = !ws->nr;
	pthread_mutex_unlock(&fake_lock);
	return clear;
}

/* Until @ws holds nothing back; 10 s stands for for ever. */
static CUresult waits_sync(struct fake_waits *ws)
{
	for (int i = 0; i < 1000000; i++) {
		if (waits_clear(ws))
			return CUDA_SUCCESS;
		usleep(10);
	}
	fprintf(stderr, "fake libcuda: a sync waited 10 s for a cuStreamWaitValue32 never met: a hang on a GPU\n");
	return CUDA_ERROR_LAUNCH_TIMEOUT;
}

struct fake_stream {
	struct fake_waits waits;
};

API CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	*s = calloc(1, sizeof(struct fake_stream));
	return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

API CUresult cuStreamDestroy(CUstream s)
{
	free(s);
	return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream s)
{
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	return waits_sync(&((struct fake_stream *)s)->waits);
}

/*
 * The driver reads the word through its device pointer: it must lie in
 * pinned host memory (cuMemHostGetDevicePointer's). Only GEQ is modelled.
 */
API CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value,
				 unsigned int flags)
{
	struct fake_stream *fs = (struct fake_stream *)s;
	const char *p = (const char *)addr;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags != CU_STREAM_WAIT_VALUE_GEQ)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < nr_hosts; i++)
		if (!hosts[i].registered && p >= hosts[i].p &&
		    p + 4 <= hosts[i].p + hosts[i].len && !(addr & 3))
			r = CUDA_SUCCESS;
	if (r == CUDA_SUCCESS) {
		waits_prune(&fs->waits);
		if (fs->waits.nr == MAX_WAITS) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			fs->waits.w[fs->waits.nr].word = (const uint32_t *)p;
			fs->waits.w[fs->waits.nr++].value = value;
		}
	}
	pthread_mutex_unlock(&fake_lock);
	return r;
}

/*
 * An event remembers whether it can be timed and when it was recorded:
 * as with the real driver, timing an event created with
 * CU_EVENT_DISABLE_TIMING, or one never recorded, is an error. It holds
 * the waits of its stream when it was recorded.
 */
struct fake_event {
	unsigned int flags;
	int recorded;
	struct timespec at;
	struct fake_waits waits;
};

API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
	CUresult r;

	if (!s || !e)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&fake_lock);
	r = waits_add(&((struct fake_stream *)s)->waits,
		      &((struct fake_event *)e)->waits);
	pthread_mutex_unlock(&fake_lock);
	return r;
}

API CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	struct fake_event *fe = calloc(1, sizeof(*fe));

	if (!fe)
		return CUDA_ERROR_OUT_OF_MEMORY;
	fe->flags = flags;
	*e = (CUevent)fe;
	return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent e, CUstream s)
{
	struct fake_event *fe = (struct fake_event *)e;

	if (!s || !e)
		return CUDA_ERROR_INVALID_HANDLE;
	fe->recorded = 1;
	clock_gettime(CLOCK_MONOTONIC, &fe->at);
	pthread_mutex_lock(&fake_lock);
	fe->waits.nr = 0;
	waits_add(&fe->waits, &((struct fake_stream *)s)->waits);
	pthread_mutex_unlock(&fake_lock);
	return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	struct fake_event *fa = (struct fake_event *)a;
	struct fake_event *fb = (struct fake_event *)b;

	if (!fa || !fb || ((fa->flags | fb->flags) & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!fa->recorded || !fb->recorded)
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((fb->at.tv_sec - fa->at.tv_sec) * 1e3 +
		      (fb->at.tv_nsec - fa->at.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent e)
{
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	return waits_clear(&((struct fake_event *)e)->waits) ?
	       CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventSynchronize(CUevent e)
{
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	return waits_sync(&((struct fake_event *)e)->waits);
}

API CUresult cuEventDestroy(CUevent e)
{
	free(e);
	return CUDA_SUCCESS;
}
