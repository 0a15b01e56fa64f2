/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend: the CUDA driver's virtual memory management.
 *
 * A reservation is cuMemAddressReserve, a handle one cuMemCreate of a
 * whole number of the device's granules (one on vmm.mapping = chunks, a
 * run's worth on extents), mapping cuMemMap (one per handle: a mapping
 * covers exactly one handle, whole) followed by one cuMemSetAccess over
 * the run; unmapping is one cuMemUnmap per handle (the driver charges
 * per handle however the calls are grouped, and never splits a mapping).
 * Streams are three non-blocking CUstreams; events are CUevents without
 * timing. Host swap buffers are pinned host memory (see cuda_host_alloc).
 * Maps the library's driver thread makes ahead are waited for on the
 * host before a copy is enqueued, as the driver checks its addresses
 * then, and on the device before an op's kernels (map_ahead.h): the
 * thread stores each map's number in a word of pinned host memory once
 * made, and the stream waits for it with cuStreamWaitValue32.
 *
 * The driver is never linked: libcuda.so.1 is opened at run time and every
 * entry point looked up by the versioned name cuda.h maps it to (e.g.
 * cuMemGetInfo -> cuMemGetInfo_v2), so that one build runs here and on a
 * machine without a driver, where open() returns -ENODEV.
 *
 * One file, past the usual length: every member of the backend's table
 * is a few driver calls over the same state, and splitting the table
 * would spread that state over files.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "base/hostmem.h"
#include "base/log.h"
#include "vmm/backend_cuda.h"
#include "vmm/calls.h"
#include "vmm/event.h"
#include "vmm/host_prep.h"
#include "vmm/vmm.h"

#define CU_STR(x)	#x
#define CU_XSTR(x)	CU_STR(x)

/* Every driver entry point used, by its cuda.h name. */
#define CU_ENTRY_POINTS(X)			\
	X(cuInit)				\
	X(cuGetErrorString)			\
	X(cuDeviceGetCount)			\
	X(cuDeviceGet)				\
	X(cuDevicePrimaryCtxRetain)		\
	X(cuDevicePrimaryCtxRelease)		\
	X(cuCtxSetCurrent)			\
	X(cuMemGetInfo)				\
	X(cuMemGetAllocationGranularity)	\
	X(cuMemAddressReserve)			\
	X(cuMemAddressFree)			\
	X(cuMemCreate)				\
	X(cuMemRelease)				\
	X(cuMemMap)				\
	X(cuMemSetAccess)			\
	X(cuMemUnmap)				\
	X(cuMemHostAlloc)			\
	X(cuMemFreeHost)			\
	X(cuMemHostRegister)			\
	X(cuMemHostUnregister)			\
	X(cuMemcpyDtoHAsync)			\
	X(cuMemcpyHtoDAsync)			\
	X(cuStreamCreate)			\
	X(cuStreamDestroy)			\
	X(cuStreamSynchronize)			\
	X(cuStreamWaitEvent)			\
	X(cuEventCreate)			\
	X(cuEventRecord)			\
	X(cuEventQuery)				\
	X(cuEventSynchronize)			\
	X(cuEventDestroy)

const char *tp_vmm_cuda_library = "libcuda.so.1";

struct cuda_backend {
	void *lib;
#define CU_MEMBER(f) __typeof__(f) *p_##f;
	CU_ENTRY_POINTS(CU_MEMBER)
#undef CU_MEMBER
	CUdevice dev;
	CUcontext ctx;
	bool ctx_retained;
	CUmemAllocationProp prop;
	CUmemAccessDesc access_rw, access_none;
	CUstream streams[TP_NR_STREAMS];
	/*
	 * Looked up apart, by either of its names: cuda.h maps it to the
	 * _v2 entry point that older drivers lack. NULL: no event timing.
	 */
	CUresult (*p_elapsed)(float *ms, CUevent start, CUevent end);
	/* How host memory is pinned, settled by the first allocation. */
	enum { HOST_UNSET, HOST_REGISTER, HOST_ALLOC } host_pin;
	/* Host swap mapped and faulted in ahead of need (host_prepare), by
	 * so many threads (vmm.cuda.fault_threads). */
	struct tp_host_preparer *prep;
	unsigned fault_threads;
	/*
	 * The streams' waits for maps (map_gate_open), where the driver
	 * has the calls (looked up apart: without them the host waits):
	 * the last map made, by its number, in pinned memory the device
	 * reads at @word_dev; and one page that stands in for a map that
	 * failed.
	 */
	CUresult (*p_wait_value)(CUstream s, CUdeviceptr addr, cuuint32_t v,
				 unsigned int flags);
	CUresult (*p_host_dev_ptr)(CUdeviceptr *d, void *p,
				   unsigned int flags);
	uint32_t *word;
	CUdeviceptr word_dev;
	CUmemGenericAllocationHandle spare;
};

struct cuda_event {
	struct tp_event base;
	CUevent ev;
};

static struct cuda_backend *cb(struct tp_vmm *vmm)
{
	return vmm->priv;
}

/* Translate @r into -errno, logging what failed. */
static int cu_err(struct cuda_backend *c, CUresult r, const char *what)
{
	const char *msg = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (c->p_cuGetErrorString)
		c->p_cuGetErrorString(r, &msg);
	tp_log(TP_LOG_ERROR, "vmm: cuda: %s failed: %s (%d)", what,
	       msg ? msg : "unknown error", (int)r);
	switch (r) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
		return -EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED:
		return -ENODEV;
	default:
		return -EIO;
	}
}

#define CU(c, call) cu_err((c), (c)->p_##call, #call)

/* Queries and syncs may come from library threads: make the context theirs. */
static void cu_bind(struct cuda_backend *c)
{
	c->p_cuCtxSetCurrent(c->ctx);
}

static int cu_resolve(struct cuda_backend *c)
{
#define CU_LOOKUP(f)							\
	c->p_##f = (__typeof__(f) *)dlsym(c->lib, CU_XSTR(f));		\
	if (!c->p_##f) {						\
		tp_log(TP_LOG_WARN, "vmm: cuda: %s lacks %s",		\
		       tp_vmm_cuda_library, CU_XSTR(f));		\
		return -ENODEV;						\
	}
	CU_ENTRY_POINTS(CU_LOOKUP)
#undef CU_LOOKUP
	*(void **)&c->p_wait_value =
		dlsym(c->lib, CU_XSTR(cuStreamWaitValue32));
	*(void **)&c->p_host_dev_ptr =
		dlsym(c->lib, CU_XSTR(cuMemHostGetDevicePointer));
	*(void **)&c->p_elapsed = dlsym(c->lib, "cuEventElapsedTime_v2");
	if (!c->p_elapsed)
		*(void **)&c->p_elapsed = dlsym(c->lib, "cuEventElapsedTime");
	return 0;
}

static void cuda_teardown(struct cuda_backend *c)
{
	int s;

	for (s = 0; s < TP_NR_STREAMS; s++)
		if (c->streams[s])
			c->p_cuStreamDestroy(c->streams[s]);
	if (c->spare)
		c->p_cuMemRelease(c->spare);
	if (c->word)
		c->p_cuMemFreeHost(c->word);
	if (c->ctx_retained)
		c->p_cuDevicePrimaryCtxRelease(c->dev);
	if (c->lib)
		dlclose(c->lib);
	tp_host_preparer_free(c->prep);
	free(c);
}

/* What the link probe copies: large enough that the copy's latency is
 * a few percent of it at PCIe 5's speed, small enough to pin at once. */
#define LINK_PROBE_BYTES	(8u << 20)

/*
 * The host link as a copy achieves it, bytes per ns, or 0: one copy of
 * LINK_PROBE_BYTES from pinned host memory to a mapping of its own,
 * after a first that warms the path, timed by events on the copy
 * stream. The policy starts from it until the library's own copies are
 * measured (policy/bandwidth.h): a guess instead, 35% of a nominal 32
 * GB/s, made an H200's 50 GB/s look like 11 and the default director
 * recompute what it should have offloaded. Best effort: what fails
 * leaves the figure unknown and the device as it was.
 */
static double probe_link(struct cuda_backend *c, size_t gran)
{
	size_t len = (LINK_PROBE_BYTES + gran - 1) / gran * gran;
	CUstream st = c->streams[TP_STREAM_H2D];
	CUmemGenericAllocationHandle h = 0;
	CUevent e0 = NULL, e1 = NULL;
	CUdeviceptr dev = 0;
	bool mapped = false;
	void *host = NULL;
	double link = 0;
	float ms = 0;

	if (!c->p_elapsed ||
	    c->p_cuMemHostAlloc(&host, len, CU_MEMHOSTALLOC_PORTABLE) ||
	    c->p_cuMemCreate(&h, len, &c->prop, 0))
		goto out;
	if (c->p_cuMemAddressReserve(&dev, len, gran, 0, 0)) {
		dev = 0;
		goto out;
	}
	if (c->p_cuMemMap(dev, len, 0, h, 0))
		goto out;
	mapped = true;
	if (c->p_cuMemSetAccess(dev, len, &c->access_rw, 1) ||
	    c->p_cuEventCreate(&e0, CU_EVENT_DEFAULT) ||
	    c->p_cuEventCreate(&e1, CU_EVENT_DEFAULT))
		goto out;
	memset(host, 0, len);
	if (c->p_cuMemcpyHtoDAsync(dev, host, len, st) ||
	    c->p_cuEventRecord(e0, st) ||
	    c->p_cuMemcpyHtoDAsync(dev, host, len, st) ||
	    c->p_cuEventRecord(e1, st) || c->p_cuEventSynchronize(e1) ||
	    c->p_elapsed(&ms, e0, e1))
		goto out;
	if (ms > 0)
		link = (double)len / ((double)ms * 1e6);
	tp_log(TP_LOG_INFO, "vmm: cuda: host link %.1f GB/s (%zu bytes in %.3f ms)",
	       link, len, (double)ms);
out:
	if (e1)
		c->p_cuEventDestroy(e1);
	if (e0)
		c->p_cuEventDestroy(e0);
	if (mapped) {
		c->p_cuStreamSynchronize(st);
		c->p_cuMemUnmap(dev, len);
	}
	if (dev)
		c->p_cuMemAddressFree(dev, len);
	if (h)
		c->p_cuMemRelease(h);
	if (host)
		c->p_cuMemFreeHost(host);
	return link;
}

/*
 * Host swap prepared ahead: the mapping and faulting in (most of the
 * time) on the preparing thread and its helpers (vmm.cuda.fault_threads),
 * which make no driver call; the registration on the caller's thread,
 * which holds the context. Not where registration is refused:
 * cuMemHostAlloc pins as it allocates.
 */
static void *map_faulted(size_t len, void *arg)
{
	return tp_hostmem_map(len, *(const unsigned *)arg);
}

static int cuda_open(struct tp_vmm *vmm, const struct tp_vmm_conf *conf)
{
	struct cuda_backend *c;
	size_t gran = 0, mem_free = 0, mem_total = 0;
	int count = 0, s, ret;
	CUresult r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fault_threads = (unsigned)conf->cuda_fault_threads;
	c->prep = tp_host_preparer_new(map_faulted, &c->fault_threads);
	if (!c->prep) {
		ret = -ENOMEM;
		goto err;
	}
	c->lib = dlopen(tp_vmm_cuda_library, RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		tp_log(TP_LOG_INFO, "vmm: cuda: cannot load %s (%s): no NVIDIA driver",
		       tp_vmm_cuda_library, dlerror());
		ret = -ENODEV;
		goto err;
	}
	ret = cu_resolve(c);
	if (ret)
		goto err;
	r = c->p_cuInit(0);
	if (r == CUDA_SUCCESS)
		r = c->p_cuDeviceGetCount(&count);
	if (r != CUDA_SUCCESS || count <= conf->device) {
		tp_log(TP_LOG_INFO, "vmm: cuda: no device %lld (driver reports %d, error %d)",
		       (long long)conf->device, count, (int)r);
		ret = -ENODEV;
		goto err;
	}
	ret = CU(c, cuDeviceGet(&c->dev, (int)conf->device));
	if (ret)
		goto err;
	ret = CU(c, cuDevicePrimaryCtxRetain(&c->ctx, c->dev));
	if (ret)
		goto err;
	c->ctx_retained = true;
	ret = CU(c, cuCtxSetCurrent(c->ctx));
	if (ret)
		goto err;

	c->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	c->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	c->prop.location.id = c->dev;
	ret = CU(c, cuMemGetAllocationGranularity(&gran, &c->prop,
						  CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if (ret)
		goto err;
	if (!gran) {
		/* Virtual memory management is not supported here. */
		tp_log(TP_LOG_WARN, "vmm: cuda: device %d reports no VMM granularity",
		       (int)c->dev);
		ret = -ENODEV;
		goto err;
	}
	ret = CU(c, cuMemGetInfo(&mem_free, &mem_total));
	if (ret)
		goto err;
	c->access_rw.location = c->prop.location;
	c->access_rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	c->access_none.location = c->prop.location;
	c->access_none.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;

	for (s = 0; s < TP_NR_STREAMS; s++) {
		ret = CU(c, cuStreamCreate(&c->streams[s], CU_STREAM_NON_BLOCKING));
		if (ret)
			goto err;
	}
	vmm->priv = c;
	vmm->granularity = gran;
	vmm->device_bytes = mem_total;
	vmm->link_bytes_per_ns = probe_link(c, gran);
	return 0;

err:
	cuda_teardown(c);
	return ret;
}

static void cuda_close(struct tp_vmm *vmm)
{
	struct cuda_backend *c = cb(vmm);
	int s;

	cu_bind(c);
	for (s = 0; s < TP_NR_STREAMS; s++)
		c->p_cuStreamSynchronize(c->streams[s]);
	cuda_teardown(c);
	vmm->priv = NULL;
}

static int cuda_reserve(struct tp_vmm *vmm, size_t len, uintptr_t *va)
{
	struct cuda_backend *c = cb(vmm);
	CUdeviceptr p = 0;
	int ret;

	ret = CU(c, cuMemAddressReserve(&p, len, vmm->va_align, 0, 0));
	if (!ret)
		*va = (uintptr_t)p;
	return ret;
}

static int cuda_release(struct tp_vmm *vmm, uintptr_t va, size_t len)
{
	struct cuda_backend *c = cb(vmm);

	/* The library's driver thread releases ranges too. */
	cu_bind(c);
	return CU(c, cuMemAddressFree((CUdeviceptr)va, len));
}

static int cuda_chunk_create(struct tp_vmm *vmm, struct tp_chunk *c)
{
	struct cuda_backend *cu = cb(vmm);
	CUmemGenericAllocationHandle h = 0;
	int ret;

	/* The library's driver thread makes handles too (vmm.map_ahead). */
	cu_bind(cu);
	ret = CU(cu, cuMemCreate(&h, (size_t)c->pages * vmm->granularity,
				 &cu->prop, 0));
	if (!ret)
		c->handle = (uint64_t)h;
	return ret;
}

static void cuda_chunk_destroy(struct tp_vmm *vmm, struct tp_chunk *c)
{
	struct cuda_backend *cu = cb(vmm);

	/* The library's driver thread releases handles too (re-carving
	 * behind, vmm.release_behind). */
	cu_bind(cu);
	CU(cu, cuMemRelease((CUmemGenericAllocationHandle)c->handle));
}

/*
 * Unmap the handles of the first @n pages of a run, one by one: a
 * cuMemUnmap must not split a mapping.
 */
static int unmap_handles(struct cuda_backend *c, uintptr_t va,
			 struct tp_chunk *const *chunks, size_t n, size_t gran)
{
	int ret = 0, r;
	size_t i;

	for (i = 0; i < n; i += chunks[i]->pages) {
		r = CU(c, cuMemUnmap((CUdeviceptr)(va + i * gran),
				     (size_t)chunks[i]->pages * gran));
		if (r && !ret)
			ret = r;
	}
	return ret;
}

static int cuda_map(struct tp_vmm *vmm, uintptr_t va,
		    struct tp_chunk *const *chunks, size_t n)
{
	struct cuda_backend *c = cb(vmm);
	size_t gran = vmm->granularity, i;
	int ret;

	/* The library's driver thread maps too (vmm.map_ahead). */
	cu_bind(c);
	for (i = 0; i < n; i += chunks[i]->pages) {
		ret = CU(c, cuMemMap((CUdeviceptr)(va + i * gran),
				     (size_t)chunks[i]->pages * gran, 0,
				     (CUmemGenericAllocationHandle)chunks[i]->handle,
				     0));
		if (ret) {
			unmap_handles(c, va, chunks, i, gran);
			return ret;
		}
	}
	return 0;
}

static int cuda_set_access(struct tp_vmm *vmm, uintptr_t va,
			   struct tp_chunk *const *chunks, size_t n,
			   unsigned prot)
{
	struct cuda_backend *c = cb(vmm);
	const CUmemAccessDesc *d = prot == TP_PROT_RW ? &c->access_rw :
							&c->access_none;

	return CU(c, cuMemSetAccess((CUdeviceptr)va, n * vmm->granularity, d,
				    1));
}

static int cuda_unmap(struct tp_vmm *vmm, uintptr_t va,
		      struct tp_chunk *const *chunks, size_t n)
{
	/* The library's driver thread unmaps too. */
	cu_bind(cb(vmm));
	return unmap_handles(cb(vmm), va, chunks, n, vmm->granularity);
}

static int cuda_map_gate_open(struct tp_vmm *vmm)
{
	struct cuda_backend *c = cb(vmm);
	void *p = NULL;
	int ret;

	if (!c->p_wait_value || !c->p_host_dev_ptr)
		return -EOPNOTSUPP;
	ret = CU(c, cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP |
					   CU_MEMHOSTALLOC_PORTABLE));
	if (ret)
		return ret;
	c->word = p;
	*c->word = 0;
	ret = cu_err(c, c->p_host_dev_ptr(&c->word_dev, p, 0),
		     "cuMemHostGetDevicePointer");
	/* A wait met already: where stream memory operations are off, the
	 * driver says so here rather than at an op's launch. */
	if (!ret)
		ret = cu_err(c, c->p_wait_value(c->streams[TP_STREAM_COMPUTE],
						c->word_dev, 0,
						CU_STREAM_WAIT_VALUE_GEQ),
			     "cuStreamWaitValue32");
	if (!ret)
		ret = CU(c, cuMemCreate(&c->spare, vmm->granularity, &c->prop,
					0));
	if (ret) {
		c->spare = 0;
		c->p_cuMemFreeHost(p);
		c->word = NULL;
	}
	return ret;
}

static void cuda_map_posted(struct tp_vmm *vmm, uint32_t seq)
{
	/* The device polls it; pinned memory is coherent with the host. */
	__atomic_store_n(cb(vmm)->word, seq, __ATOMIC_RELEASE);
}

static int cuda_stream_wait_map(struct tp_vmm *vmm, enum tp_stream s,
				uint32_t seq, uint64_t t)
{
	struct cuda_backend *c = cb(vmm);

	/* GEQ compares as (int32_t)(*word - seq) >= 0: numbers may wrap. */
	return cu_err(c, c->p_wait_value(c->streams[s], c->word_dev, seq,
					 CU_STREAM_WAIT_VALUE_GEQ),
		      "cuStreamWaitValue32");
}

static int cuda_map_spare(struct tp_vmm *vmm, uintptr_t va, size_t n)
{
	struct cuda_backend *c = cb(vmm);
	size_t gran = vmm->granularity, i;
	int ret = 0;

	/* A handle may be mapped at many addresses: one page at each. */
	cu_bind(c);
	for (i = 0; i < n && !ret; i++)
		ret = CU(c, cuMemMap((CUdeviceptr)(va + i * gran), gran, 0,
				     c->spare, 0));
	if (!ret)
		ret = CU(c, cuMemSetAccess((CUdeviceptr)va, n * gran,
					   &c->access_rw, 1));
	return ret;
}

static int cuda_copy_d2h(struct tp_vmm *vmm, void *host, uintptr_t va,
			 size_t len, enum tp_stream s)
{
	struct cuda_backend *c = cb(vmm);

	return CU(c, cuMemcpyDtoHAsync(host, (CUdeviceptr)va, len,
				       c->streams[s]));
}

static int cuda_copy_h2d(struct tp_vmm *vmm, uintptr_t va, const void *host,
			 size_t len, enum tp_stream s)
{
	struct cuda_backend *c = cb(vmm);

	return CU(c, cuMemcpyHtoDAsync((CUdeviceptr)va, host, len,
				       c->streams[s]));
}

static int event_create_flags(struct tp_vmm *vmm, struct tp_event **ev,
			      unsigned int flags)
{
	struct cuda_backend *c = cb(vmm);
	struct cuda_event *ce = calloc(1, sizeof(*ce));
	int ret;

	if (!ce)
		return -ENOMEM;
	ret = CU(c, cuEventCreate(&ce->ev, flags));
	if (ret) {
		free(ce);
		return ret;
	}
	*ev = &ce->base;
	return 0;
}

static int cuda_event_create(struct tp_vmm *vmm, struct tp_event **ev)
{
	return event_create_flags(vmm, ev, CU_EVENT_DISABLE_TIMING);
}

static int cuda_event_create_timed(struct tp_vmm *vmm, struct tp_event **ev)
{
	return event_create_flags(vmm, ev, CU_EVENT_DEFAULT);
}

static int cuda_event_elapsed_ns(struct tp_vmm *vmm, struct tp_event *a,
				 struct tp_event *b, uint64_t *ns)
{
	struct cuda_event *ca = container_of(a, struct cuda_event, base);
	struct cuda_event *ce = container_of(b, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);
	float ms = 0;
	CUresult r;

	if (!c->p_elapsed)
		return -EOPNOTSUPP;
	cu_bind(c);
	r = c->p_elapsed(&ms, ca->ev, ce->ev);
	if (r == CUDA_ERROR_NOT_READY)
		return -EAGAIN;
	if (r != CUDA_SUCCESS)
		return cu_err(c, r, "cuEventElapsedTime");
	*ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
	return 0;
}

static void cuda_event_destroy(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct cuda_event *ce = container_of(ev, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);

	cu_bind(c);
	CU(c, cuEventDestroy(ce->ev));
	free(ce);
}

static int cuda_event_record(struct tp_vmm *vmm, struct tp_event *ev,
			     enum tp_stream s)
{
	struct cuda_event *ce = container_of(ev, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);

	return CU(c, cuEventRecord(ce->ev, c->streams[s]));
}

static int cuda_stream_wait(struct tp_vmm *vmm, enum tp_stream s,
			    struct tp_event *ev)
{
	struct cuda_event *ce = container_of(ev, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);

	return CU(c, cuStreamWaitEvent(c->streams[s], ce->ev, 0));
}

static int cuda_event_query(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct cuda_event *ce = container_of(ev, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);
	CUresult r;

	cu_bind(c);
	r = c->p_cuEventQuery(ce->ev);
	if (r == CUDA_ERROR_NOT_READY)
		return -EAGAIN;
	return cu_err(c, r, "cuEventQuery");
}

static int cuda_event_sync(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct cuda_event *ce = container_of(ev, struct cuda_event, base);
	struct cuda_backend *c = cb(vmm);

	cu_bind(c);
	return CU(c, cuEventSynchronize(ce->ev));
}

static int cuda_stream_sync(struct tp_vmm *vmm, enum tp_stream s)
{
	struct cuda_backend *c = cb(vmm);

	return CU(c, cuStreamSynchronize(c->streams[s]));
}

/*
 * Pinned host memory for swap, obtained while a step runs: what it costs
 * is time on the thread that issues ops, and the driver holds up other
 * threads' calls while it pins. On an H100, cuMemHostAlloc pinned 512
 * MiB in 208 ms, and queued work on another thread waited all of it;
 * memory already faulted in registers in 30 ms. So the memory is mapped
 * and faulted in first, with no driver call (base/hostmem.h), and only
 * then registered (cuMemHostRegister).
 * A driver that refuses the first registration (some restrict it) gets
 * cuMemHostAlloc for all.
 */
static void *cuda_host_alloc_pinned(struct cuda_backend *c, size_t len)
{
	void *p = NULL;
	int ret;

	ret = CU(c, cuMemHostAlloc(&p, len, CU_MEMHOSTALLOC_PORTABLE));
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return p;
}

/* Pin @p, mapped and faulted in, or give it up for cuMemHostAlloc. */
static void *cuda_host_register(struct cuda_backend *c, void *p, size_t len)
{
	CUresult r;

	cu_bind(c);
	r = c->p_cuMemHostRegister(p, len, CU_MEMHOSTREGISTER_PORTABLE);
	if (r == CUDA_SUCCESS) {
		c->host_pin = HOST_REGISTER;
		return p;
	}
	tp_hostmem_unmap(p, len);
	if (c->host_pin == HOST_REGISTER || r == CUDA_ERROR_OUT_OF_MEMORY) {
		errno = -cu_err(c, r, "cuMemHostRegister");
		return NULL;
	}
	tp_log(TP_LOG_WARN, "vmm: cuda: host memory cannot be registered: pinning by cuMemHostAlloc");
	c->host_pin = HOST_ALLOC;
	return cuda_host_alloc_pinned(c, len);
}

static void *cuda_host_alloc(struct tp_vmm *vmm, size_t len)
{
	struct cuda_backend *c = cb(vmm);
	void *p;

	cu_bind(c);
	if (c->host_pin == HOST_ALLOC)
		return cuda_host_alloc_pinned(c, len);
	p = tp_hostmem_map(len, c->fault_threads);
	if (!p)
		return NULL;		/* errno says why */
	return cuda_host_register(c, p, len);
}

static void *cuda_host_prepare(struct tp_vmm *vmm, size_t len)
{
	if (cb(vmm)->host_pin == HOST_ALLOC) {
		errno = ENOTSUP;
		return NULL;
	}
	return tp_host_prep_start(cb(vmm)->prep, len);
}

static void *cuda_host_prepared(struct tp_vmm *vmm, void *token, bool wait,
				size_t *len)
{
	void *p = tp_host_prep_finish(token, wait, len);

	if (!p)
		return NULL;		/* errno says why */
	if (cb(vmm)->host_pin == HOST_ALLOC) {
		/* Registration was refused meanwhile. */
		tp_hostmem_unmap(p, *len);
		cu_bind(cb(vmm));
		return cuda_host_alloc_pinned(cb(vmm), *len);
	}
	return cuda_host_register(cb(vmm), p, *len);
}

static void cuda_host_free(struct tp_vmm *vmm, void *p, size_t len)
{
	struct cuda_backend *c = cb(vmm);

	cu_bind(c);
	if (c->host_pin == HOST_ALLOC) {
		CU(c, cuMemFreeHost(p));
		return;
	}
	CU(c, cuMemHostUnregister(p));
	tp_hostmem_unmap(p, len);
}

/* Launch functions enqueue their own kernels on the stream handle. */
static int cuda_launch(struct tp_vmm *vmm, enum tp_stream s, const char *name,
		       uint64_t cost_ns, int (*fn)(void *arg), void *arg)
{
	return fn ? fn(arg) : 0;
}

static void *cuda_stream_handle(struct tp_vmm *vmm, enum tp_stream s)
{
	return cb(vmm)->streams[s];
}

static uint64_t cuda_now_ns(struct tp_vmm *vmm)
{
	return tp_vmm_mono_ns();
}

const struct tp_vmm_ops tp_vmm_cuda_ops = {
	.name = "cuda",
	.device = TP_DEVICE_CUDA,
	.open = cuda_open,
	.close = cuda_close,
	.reserve = cuda_reserve,
	.release = cuda_release,
	.chunk_create = cuda_chunk_create,
	.chunk_destroy = cuda_chunk_destroy,
	.map = cuda_map,
	.set_access = cuda_set_access,
	.unmap = cuda_unmap,
	.copy_d2h = cuda_copy_d2h,
	.copy_h2d = cuda_copy_h2d,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.stream_wait = cuda_stream_wait,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.event_create_timed = cuda_event_create_timed,
	.event_elapsed_ns = cuda_event_elapsed_ns,
	.stream_sync = cuda_stream_sync,
	.host_alloc = cuda_host_alloc,
	.host_prepare = cuda_host_prepare,
	.host_prepared = cuda_host_prepared,
	.host_free = cuda_host_free,
	.launch = cuda_launch,
	.map_gate_open = cuda_map_gate_open,
	.map_posted = cuda_map_posted,
	.stream_wait_map = cuda_stream_wait_map,
	.map_spare = cuda_map_spare,
	.stream_handle = cuda_stream_handle,
	.now_ns = cuda_now_ns,
};
