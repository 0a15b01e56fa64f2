/* SPDX-License-Identifier: MIT */
/*
 * The generic vmm layer: backend selection, the counted and timed wrapper
 * around every backend call, fault injection, and the glue between the
 * chunk pool, mapping and deferred unmaps.
 *
 * One file, past the usual length: each wrapper of a backend call is a
 * few lines, and they share the statics that count, time, lock and
 * fault-inject every call, which a split would have to export.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "vmm/calls.h"
#include "vmm/chunk_pool.h"
#include "vmm/contig_pool.h"
#include "vmm/deferred.h"
#include "vmm/event.h"
#include "vmm/extent_pool.h"
#include "vmm/vmm.h"

uint64_t tp_vmm_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Statistics may be updated from library threads (event queries). */
static void stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/*
 * The backend's host clock (the sim's is virtual) once it is open; before
 * that, and after it closed, monotonic time.
 */
static uint64_t call_clock(struct tp_vmm *vmm)
{
	return vmm->ops && vmm->priv ? vmm->ops->now_ns(vmm) :
				       tp_vmm_mono_ns();
}

int tp_vmm_call_begin(struct tp_vmm *vmm, enum tp_vmm_call k, bool inject,
		      uint64_t *t0)
{
#ifdef TP_FAULT_INJECTION
	if (inject && __atomic_load_n(&vmm->fail_at, __ATOMIC_RELAXED) > 0) {
		long n = __atomic_add_fetch(&vmm->calls_counted, 1,
					    __ATOMIC_RELAXED);

		if (n == vmm->fail_at) {
			vmm->fail_at = 0;
			tp_log(TP_LOG_DEBUG, "vmm: injected failure of call %ld (kind %d)",
			       n, (int)k);
			return -vmm->fail_errno;
		}
	}
#endif
	*t0 = call_clock(vmm);
	return 0;
}

/* Whether this thread is the library's driver thread (or plays it). */
static __thread bool background;

void tp_vmm_background(bool on)
{
	background = on;
}

void tp_vmm_call_end(struct tp_vmm *vmm, enum tp_vmm_call k, uint64_t t0,
		     uint64_t units)
{
	struct tp_vmm_call_stats *cs = &vmm->stats.call[k];
	const struct tp_vmm_observer *obs;
	uint64_t t1 = call_clock(vmm);

	stat_add(&cs->calls, 1);
	stat_add(&cs->ns, t1 - t0);
	stat_add(&cs->units, units);
	if (background && k <= TP_CALL_UNMAP) {
		stat_add(&vmm->stats.bg_calls, 1);
		stat_add(&vmm->stats.bg_ns, t1 - t0);
	}
	obs = __atomic_load_n(&vmm->obs, __ATOMIC_ACQUIRE);
	/* Host memory too: pinned, it costs as much as a copy of it. */
	if (obs && obs->driver &&
	    (k <= TP_CALL_UNMAP || k == TP_CALL_HOST_ALLOC))
		obs->driver(obs->priv, k, t0, t1,
			    k == TP_CALL_HOST_ALLOC ? 0 : units, background);
}

/* What the thread's next wait is for (tp_vmm_wait_why()). */
static __thread const char *wait_why;

void tp_vmm_wait_why(const char *why)
{
	wait_why = why;
}

/* A blocking wait on the device, for the observer. */
static int waited(struct tp_vmm *vmm, uint64_t t0, int ret)
{
	const char *why = wait_why;

	wait_why = NULL;
	if (vmm->obs && vmm->obs->wait)
		vmm->obs->wait(vmm->obs->priv, t0, call_clock(vmm), why);
	return ret;
}

#ifdef TP_FAULT_INJECTION
void tp_vmm_fail_at(struct tp_vmm *vmm, long nth, int err)
{
	vmm->calls_counted = 0;
	vmm->fail_errno = err > 0 ? err : (err < 0 ? -err : EIO);
	__atomic_store_n(&vmm->fail_at, nth > 0 ? nth : 0, __ATOMIC_RELAXED);
}
#endif

/* --- open and close ------------------------------------------------- */

static int try_open(struct tp_vmm *vmm, const struct tp_vmm_ops *ops,
		    const struct tp_vmm_conf *conf)
{
	int ret;

	vmm->ops = ops;
	ret = ops->open(vmm, conf);
	if (ret)
		vmm->ops = NULL;
	return ret;
}

struct tp_vmm *tp_vmm_open(const struct tp_vmm_conf *conf)
{
	struct tp_vmm *vmm;
	int ret;

	vmm = calloc(1, sizeof(*vmm));
	if (!vmm)
		return NULL;
	vmm->deferred = tp_deferred_new();
	if (!vmm->deferred) {
		ret = -ENOMEM;
		goto err_free;
	}
	switch (conf->backend) {
	case TP_VMM_AUTO:
		ret = try_open(vmm, &tp_vmm_cuda_ops, conf);
		if (ret == -ENODEV) {
			tp_log(TP_LOG_INFO, "vmm: no usable GPU, using the host backend");
			ret = try_open(vmm, &tp_vmm_host_ops, conf);
		}
		break;
	case TP_VMM_CUDA:
		ret = try_open(vmm, &tp_vmm_cuda_ops, conf);
		break;
	case TP_VMM_HOST:
		ret = try_open(vmm, &tp_vmm_host_ops, conf);
		break;
	case TP_VMM_SIM:
		ret = try_open(vmm, &tp_vmm_sim_ops, conf);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret)
		goto err_deferred;
	if (!vmm->granularity || !vmm->device_bytes) {
		tp_log(TP_LOG_ERROR, "vmm: backend %s opened without a granularity",
		       vmm->ops->name);
		vmm->ops->close(vmm);
		ret = -EINVAL;
		goto err_deferred;
	}
	/* The driver's granule, or the chunk if larger: a chunk multiple. */
	vmm->va_align = (TP_VMM_VA_ALIGN + vmm->granularity - 1) /
			vmm->granularity * vmm->granularity;
	/* Coop's contiguous pool indexes chunks: one handle each. */
	vmm->mapping = conf->mode == TP_VMM_MODE_CONTIGUOUS ?
		       TP_VMM_MAPPING_CHUNKS : conf->mapping;
	vmm->ordered_reuse = vmm->mapping == TP_VMM_MAPPING_EXTENTS;
	vmm->release_behind = conf->release_behind;
	vmm->map_ahead = conf->map_ahead;
	vmm->map_gate = conf->map_gate;
	vmm->extent_max = conf->extent_max / vmm->granularity;
	if (conf->extent_max && !vmm->extent_max)
		vmm->extent_max = 1;
	if (conf->va_reserve &&
	    vmm->device_bytes <= SIZE_MAX / 2 / conf->va_reserve)
		vmm->arena_len = (size_t)vmm->device_bytes * conf->va_reserve /
				 vmm->va_align * vmm->va_align;
	tp_log(TP_LOG_INFO, "vmm: backend %s, chunk %zu bytes, device %llu bytes",
	       vmm->ops->name, vmm->granularity,
	       (unsigned long long)vmm->device_bytes);
	return vmm;

err_deferred:
	free(vmm->deferred);
err_free:
	free(vmm);
	errno = -ret;
	return NULL;
}

/*
 * The address-space arena (va_arena.h), reserved at the first range. A
 * backend that cannot reserve that much gives each range its own.
 */
static void arena_open(struct tp_vmm *vmm)
{
	size_t len = vmm->arena_len;
	uintptr_t base;
	uint64_t t0;
	int ret;

	vmm->arena_len = 0;		/* one try */
	ret = tp_vmm_call_begin(vmm, TP_CALL_RESERVE, false, &t0);
	if (ret)
		return;
	ret = vmm->ops->reserve(vmm, len, &base);
	tp_vmm_call_end(vmm, TP_CALL_RESERVE, t0, len);
	if (ret) {
		tp_log(TP_LOG_INFO, "vmm: no arena of %zu bytes of address space (%s): a reservation per range",
		       len, strerror(-ret));
		return;
	}
	if (tp_va_arena_init(&vmm->arena, base, len, vmm->va_align)) {
		vmm->ops->release(vmm, base, len);
		return;
	}
	vmm->arena_on = true;
}

static void arena_close(struct tp_vmm *vmm)
{
	uint64_t t0;

	if (!vmm->arena_on)
		return;
	if (vmm->arena.ranges)
		tp_log(TP_LOG_WARN, "vmm: %zu ranges still reserved at close",
		       vmm->arena.ranges);
	if (!tp_vmm_call_begin(vmm, TP_CALL_RELEASE, false, &t0)) {
		vmm->ops->release(vmm, vmm->arena.base, vmm->arena.len);
		tp_vmm_call_end(vmm, TP_CALL_RELEASE, t0, vmm->arena.len);
	}
	tp_va_arena_fini(&vmm->arena);
	vmm->arena_on = false;
}

void tp_vmm_close(struct tp_vmm *vmm)
{
	if (!vmm)
		return;
#ifdef TP_FAULT_INJECTION
	vmm->fail_at = 0;
#endif
	tp_deferred_free(vmm, vmm->deferred);
	vmm->deferred = NULL;
	tp_chunk_pool_free(vmm, vmm->pool);
	vmm->pool = NULL;
	arena_close(vmm);
	vmm->ops->close(vmm);
	free(vmm);
}

void tp_vmm_observe(struct tp_vmm *vmm, const struct tp_vmm_observer *obs)
{
	tp_deferred_lock(vmm->deferred);
	__atomic_store_n(&vmm->obs, obs, __ATOMIC_RELEASE);
	tp_deferred_quiesce(vmm->deferred);
	tp_deferred_unlock(vmm->deferred);
}

/* --- the pool -------------------------------------------------------- */

/* The lock over the pool and the deferred unmaps (the driver thread's). */
static void lock(const struct tp_vmm *vmm)
{
	tp_deferred_lock(vmm->deferred);
}

static void unlock(const struct tp_vmm *vmm)
{
	tp_deferred_unlock(vmm->deferred);
}

/*
 * Chunks that handles released behind may hold beyond a budget of @nr:
 * vmm.release_behind percent of it, within the device memory the budget
 * leaves.
 */
static size_t release_headroom(const struct tp_vmm *vmm, uint64_t nr)
{
	uint64_t device = vmm->device_bytes / vmm->granularity;
	uint64_t room = nr * vmm->release_behind / 100;

	if (device <= nr)
		return 0;
	return (size_t)(room < device - nr ? room : device - nr);
}

int tp_vmm_pool_create(struct tp_vmm *vmm, uint64_t budget_bytes)
{
	uint64_t nr = budget_bytes / vmm->granularity;

	if (!budget_bytes)
		return -EINVAL;
	if (vmm->pool)
		return -EEXIST;
	if (!nr)
		nr = 1;
	if (nr > UINT32_MAX)
		return -EINVAL;
	/* A handle may hold 1/32 of the budget at most: a tensor larger
	 * than that can then leave in parts (partial eviction, the rows a
	 * split op is done with) while the rest of it stays. */
	if (!vmm->extent_max || vmm->extent_max > nr / TP_EXTENT_SHARE)
		vmm->extent_max = nr / TP_EXTENT_SHARE;
	if (!vmm->extent_max || vmm->mapping != TP_VMM_MAPPING_EXTENTS)
		vmm->extent_max = 1;
	vmm->pool = tp_chunk_pool_new((size_t)nr,
				      vmm->mapping == TP_VMM_MAPPING_EXTENTS,
				      vmm->extent_max, release_headroom(vmm, nr));
	if (!vmm->pool)
		return -errno;
	vmm->nr_chunks = (size_t)nr;
	/* Old mappings are the driver thread's to unmap (ordered reuse);
	 * without the thread the caller's polls do it. */
	if (vmm->ordered_reuse && tp_deferred_start(vmm, vmm->deferred))
		tp_log(TP_LOG_WARN, "vmm: no driver thread: unmaps are polled");
	tp_map_ahead_start(vmm, vmm->deferred, vmm->map_ahead);
	return 0;
}

int tp_vmm_do_chunk_create(struct tp_vmm *vmm, struct tp_chunk *c,
			   bool inject)
{
	uint64_t t0;
	int ret;

	ret = tp_vmm_call_begin(vmm, TP_CALL_CHUNK_CREATE, inject, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->chunk_create(vmm, c);
	tp_vmm_call_end(vmm, TP_CALL_CHUNK_CREATE, t0, 1);
	return ret;
}

void tp_vmm_do_chunk_destroy(struct tp_vmm *vmm, struct tp_chunk *c)
{
	uint64_t t0;

	if (c->flags & TP_CHUNK_UNBORN)
		return;		/* never made */
	tp_vmm_call_begin(vmm, TP_CALL_CHUNK_DESTROY, false, &t0);
	vmm->ops->chunk_destroy(vmm, c);
	tp_vmm_call_end(vmm, TP_CALL_CHUNK_DESTROY, t0, 1);
}

int tp_vmm_chunks_take(struct tp_vmm *vmm, struct tp_chunk **out, size_t n)
{
	return tp_vmm_chunks_take_side(vmm, out, n, TP_SIDE_LEFT);
}

int tp_vmm_chunks_take_side(struct tp_vmm *vmm, struct tp_chunk **out,
			    size_t n, enum tp_pool_side side)
{
	if (!vmm->pool)
		return -EINVAL;
	int ret;

	if (!n)
		return 0;
	lock(vmm);
	if (vmm->deferred->head)
		tp_deferred_reap(vmm, vmm->deferred);
	ret = tp_chunk_pool_take_side(vmm, vmm->pool, out, n, side);
	unlock(vmm);
	return ret;
}

int tp_vmm_pool_set_contiguous(struct tp_vmm *vmm)
{
	struct tp_chunk_pool *pool;

	if (!vmm->pool)
		return -EINVAL;
	/* The driver's physical memory is not one indexable run. */
	if (vmm->ops == &tp_vmm_cuda_ops)
		return -EOPNOTSUPP;
	if (vmm->pool->ext) {
		/* Runs of chunk indices need one handle per chunk; and
		 * handles still being released behind are the pool's. */
		if (vmm->pool->ext->handles || vmm->pool->ext->dying)
			return -EBUSY;
		tp_deferred_stop(vmm->deferred);
		pool = tp_chunk_pool_new(vmm->nr_chunks, false, 0, 0);
		if (!pool)
			return -errno;
		tp_chunk_pool_free(vmm, vmm->pool);
		vmm->pool = pool;
		vmm->mapping = TP_VMM_MAPPING_CHUNKS;
		vmm->ordered_reuse = false;
	}
	return tp_chunk_pool_set_contiguous(vmm->pool);
}

bool tp_vmm_pool_contiguous(const struct tp_vmm *vmm)
{
	return vmm->pool && vmm->pool->contig;
}

static bool fit(const struct tp_vmm *vmm, size_t n)
{
	if (!vmm->pool)
		return false;
	if (vmm->pool->contig)
		return tp_contig_pool_fits(vmm->pool->contig, n);
	return tp_chunk_pool_available(vmm->pool) >= n;
}

bool tp_vmm_chunks_fit(const struct tp_vmm *vmm, size_t n)
{
	bool ok;

	lock(vmm);
	ok = fit(vmm, n);
	unlock(vmm);
	return ok;
}

void tp_vmm_frag_sample(struct tp_vmm *vmm, size_t n)
{
	if (tp_vmm_pool_contiguous(vmm))
		tp_contig_pool_sample(vmm->pool->contig, n);
}

uint64_t tp_vmm_frag_ppm(const struct tp_vmm *vmm)
{
	return tp_vmm_pool_contiguous(vmm) ?
	       tp_contig_pool_frag_ppm(vmm->pool->contig) : 0;
}

void tp_vmm_free_runs(const struct tp_vmm *vmm,
		      void (*fn)(void *arg, size_t start, size_t len),
		      void *arg)
{
	const struct tp_contig_pool *cp;

	if (!tp_vmm_pool_contiguous(vmm))
		return;
	cp = vmm->pool->contig;
	for (size_t i = 0; i < cp->nruns; i++)
		fn(arg, cp->runs[i].start, cp->runs[i].len);
}

void tp_vmm_chunks_put(struct tp_vmm *vmm, struct tp_chunk *const *c, size_t n)
{
	lock(vmm);
	tp_chunk_pool_put(vmm->pool, c, n);
	unlock(vmm);
}

static size_t chunks_free(const struct tp_vmm *vmm)
{
	return vmm->pool ? tp_chunk_pool_available(vmm->pool) : 0;
}

static size_t chunks_pending(const struct tp_vmm *vmm)
{
	return vmm->deferred->chunks +
	       (vmm->pool ? tp_chunk_pool_pending(vmm->pool) : 0);
}

size_t tp_vmm_chunks_free(const struct tp_vmm *vmm)
{
	size_t n;

	lock(vmm);
	n = chunks_free(vmm);
	unlock(vmm);
	return n;
}

size_t tp_vmm_chunks_pending(const struct tp_vmm *vmm)
{
	size_t n;

	lock(vmm);
	n = chunks_pending(vmm);
	unlock(vmm);
	return n;
}

bool tp_vmm_chunks_takeable(const struct tp_vmm *vmm, size_t n)
{
	bool ok;

	lock(vmm);
	ok = fit(vmm, n) || (vmm->ordered_reuse &&
			     chunks_free(vmm) + chunks_pending(vmm) >= n);
	unlock(vmm);
	return ok;
}

/* --- ranges and mappings --------------------------------------------- */

static bool aligned(const struct tp_vmm *vmm, uintptr_t x)
{
	return x % vmm->granularity == 0;
}

/* What a range of @len bytes reserves: up to the next va_align. */
static size_t reserved_len(const struct tp_vmm *vmm, size_t len)
{
	return (len + vmm->va_align - 1) / vmm->va_align * vmm->va_align;
}

int tp_vmm_reserve(struct tp_vmm *vmm, size_t len, uintptr_t *va)
{
	uint64_t t0;
	int ret;

	if (!len || !aligned(vmm, len))
		return -EINVAL;
	if (vmm->arena_len)
		arena_open(vmm);
	if (vmm->arena_on &&
	    tp_va_arena_alloc(&vmm->arena, reserved_len(vmm, len), va)) {
		vmm->stats.ranges_reserved++;
		return 0;
	}
	ret = tp_vmm_call_begin(vmm, TP_CALL_RESERVE, true, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->reserve(vmm, reserved_len(vmm, len), va);
	tp_vmm_call_end(vmm, TP_CALL_RESERVE, t0, len);
	if (!ret)
		vmm->stats.ranges_reserved++;
	return ret;
}

int tp_vmm_do_release(struct tp_vmm *vmm, uintptr_t va, size_t len,
		      bool inject)
{
	uint64_t t0;
	int ret;

	if (vmm->arena_on && tp_va_arena_owns(&vmm->arena, va)) {
		ret = tp_va_arena_free(&vmm->arena, va, len);
		if (!ret)
			__atomic_fetch_sub(&vmm->stats.ranges_reserved, 1,
					   __ATOMIC_RELAXED);
		return ret;
	}
	ret = tp_vmm_call_begin(vmm, TP_CALL_RELEASE, inject, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->release(vmm, va, len);
	tp_vmm_call_end(vmm, TP_CALL_RELEASE, t0, len);
	if (!ret)
		vmm->stats.ranges_reserved--;
	return ret;
}

int tp_vmm_release(struct tp_vmm *vmm, uintptr_t va, size_t len)
{
	int ret;

	if (!len || va % vmm->va_align || !aligned(vmm, len))
		return -EINVAL;
	len = reserved_len(vmm, len);
	/*
	 * Pages still waiting on a deferred unmap are mapped, and waiting
	 * for their work would block the host: the range goes when the
	 * last of them is reaped.
	 */
	lock(vmm);
	if (vmm->deferred->head) {
		tp_deferred_reap(vmm, vmm->deferred);
		if (tp_deferred_overlaps(vmm, vmm->deferred, va, len)) {
			ret = tp_deferred_add_release(vmm, vmm->deferred, va,
						      len);
			unlock(vmm);
			return ret;
		}
	}
	unlock(vmm);
	return tp_vmm_do_release(vmm, va, len, true);
}

/*
 * Whether the per-page array @c of a run of @n pages at @va holds whole
 * handles, each repeated once per page it backs, and each mapped at its
 * first page (@mapped) or not mapped anywhere.
 */
static bool whole_handles(const struct tp_vmm *vmm, uintptr_t va,
			  struct tp_chunk *const *c, size_t n, bool mapped)
{
	for (size_t i = 0; i < n;) {
		const struct tp_chunk *h = c[i];

		if (!h || !h->pages || h->pages > n - i ||
		    h->va != (mapped ? va + i * vmm->granularity : 0))
			return false;
		for (size_t j = 1; j < h->pages; j++)
			if (c[i + j] != h)
				return false;
		i += h->pages;
	}
	return true;
}

/* Handles in a run of @n pages whose per-page array is @c. */
static uint64_t handles_in(struct tp_chunk *const *c, size_t n)
{
	uint64_t h = 0;

	for (size_t i = 0; i < n; i += c[i]->pages)
		h++;
	return h;
}

static void count_handles(struct tp_vmm *vmm, enum tp_vmm_call k,
			  struct tp_chunk *const *c, size_t n)
{
	stat_add(&vmm->stats.call[k].handles, handles_in(c, n));
}

/* Handles of the run that a map placed, or an unmap took away. */
static void handles_at(const struct tp_vmm *vmm, uintptr_t va,
		       struct tp_chunk *const *c, size_t n, bool mapped)
{
	for (size_t i = 0; i < n; i += c[i]->pages)
		c[i]->va = mapped ? va + i * vmm->granularity : 0;
}

int tp_vmm_do_unmap(struct tp_vmm *vmm, uintptr_t va,
		    struct tp_chunk *const *c, size_t n, bool inject)
{
	uint64_t t0;
	int ret;

	ret = tp_vmm_call_begin(vmm, TP_CALL_UNMAP, inject, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->unmap(vmm, va, c, n);
	tp_vmm_call_end(vmm, TP_CALL_UNMAP, t0, n);
	count_handles(vmm, TP_CALL_UNMAP, c, n);
	if (!ret) {
		handles_at(vmm, va, c, n, false);
		vmm->stats.chunks_mapped -= n;
	}
	return ret;
}

int tp_vmm_do_unmap_old(struct tp_vmm *vmm, uintptr_t va,
			struct tp_chunk *const *c, size_t n)
{
	uint64_t t0;
	int ret;

	tp_vmm_call_begin(vmm, TP_CALL_UNMAP, false, &t0);
	ret = vmm->ops->unmap(vmm, va, c, n);
	tp_vmm_call_end(vmm, TP_CALL_UNMAP, t0, n);
	count_handles(vmm, TP_CALL_UNMAP, c, n);
	return ret;
}

int tp_vmm_do_map(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
		  size_t n, bool inject)
{
	uint64_t t0;
	int ret;

	ret = tp_vmm_call_begin(vmm, TP_CALL_MAP, inject, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->map(vmm, va, c, n);
	tp_vmm_call_end(vmm, TP_CALL_MAP, t0, n);
	count_handles(vmm, TP_CALL_MAP, c, n);
	if (ret)
		return ret;
	ret = tp_vmm_call_begin(vmm, TP_CALL_SET_ACCESS, inject, &t0);
	if (!ret) {
		ret = vmm->ops->set_access(vmm, va, c, n, TP_PROT_RW);
		tp_vmm_call_end(vmm, TP_CALL_SET_ACCESS, t0, n);
		count_handles(vmm, TP_CALL_SET_ACCESS, c, n);
	}
	if (ret)
		tp_vmm_do_unmap_old(vmm, va, c, n);
	return ret;
}

/* The run of @n pages at @va is mapped (or will be, ahead): count it. */
static void mapped(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
		   size_t n)
{
	handles_at(vmm, va, c, n, true);
	vmm->stats.chunks_mapped += n;
	if (vmm->stats.chunks_mapped > vmm->stats.chunks_peak)
		vmm->stats.chunks_peak = vmm->stats.chunks_mapped;
}

int tp_vmm_map(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
	       size_t n)
{
	size_t len = n * vmm->granularity;
	int ret;

	if (!n || !aligned(vmm, va) || !whole_handles(vmm, va, c, n, false))
		return -EINVAL;
	/* A handle the driver thread is to make: it maps the run too. */
	for (size_t i = 0; i < n; i += c[i]->pages)
		if (c[i]->flags & TP_CHUNK_UNBORN) {
			ret = tp_vmm_map_ahead(vmm, va, c, n);
			lock(vmm);
			ret = ret ?: tp_map_ahead_wait(vmm, vmm->deferred);
			unlock(vmm);
			return ret;
		}
	lock(vmm);
	ret = tp_deferred_flush_range(vmm, vmm->deferred, va, len);
	unlock(vmm);
	if (!ret)
		ret = tp_vmm_do_map(vmm, va, c, n, true);
	if (!ret)
		mapped(vmm, va, c, n);
	return ret;
}

int tp_vmm_map_ahead(struct tp_vmm *vmm, uintptr_t va,
		     struct tp_chunk *const *c, size_t n)
{
	struct tp_deferred *d = vmm->deferred;
	uint64_t t0;
	int ret;

	if (!d->ahead.on)
		return tp_vmm_map(vmm, va, c, n);
	if (!n || !aligned(vmm, va) || !whole_handles(vmm, va, c, n, false))
		return -EINVAL;
	/* Injected failures where the calls would have been made. */
	ret = tp_vmm_call_begin(vmm, TP_CALL_MAP, true, &t0);
	if (!ret)
		ret = tp_vmm_call_begin(vmm, TP_CALL_SET_ACCESS, true, &t0);
	if (ret)
		return ret;
	/* Old mappings over the range: the driver thread unmaps them first. */
	lock(vmm);
	ret = tp_map_ahead_wait_work(vmm, d, va, c, n);
	ret = ret ?: tp_map_ahead_add(vmm, d, va, c, n);
	unlock(vmm);
	if (ret)
		return ret;
	mapped(vmm, va, c, n);
	vmm->stats.maps_ahead++;
	return 0;
}

int tp_vmm_gate(struct tp_vmm *vmm, enum tp_stream s)
{
	return tp_vmm_gate_work(vmm, s, TP_WORK_ANY);
}

int tp_vmm_gate_work(struct tp_vmm *vmm, enum tp_stream s, enum tp_vmm_work w)
{
	bool device;

	if ((unsigned)s >= TP_NR_STREAMS)
		return -EINVAL;
	switch (w) {
	case TP_WORK_KERNELS:
		device = vmm->map_gate != TP_MAP_GATE_HOST;
		break;
	case TP_WORK_OP:
		device = vmm->map_gate == TP_MAP_GATE_OPS;
		break;
	default:
		device = false;
	}
	return tp_map_ahead_gate(vmm, vmm->deferred, s, device);
}

int tp_vmm_unmap(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
		 size_t n)
{
	int ret;

	if (!n || !aligned(vmm, va) || !whole_handles(vmm, va, c, n, true))
		return -EINVAL;
	/* The run may be one the driver thread is still to map. */
	lock(vmm);
	ret = tp_map_ahead_wait(vmm, vmm->deferred);
	unlock(vmm);
	if (ret)
		return ret;
	return tp_vmm_do_unmap(vmm, va, c, n, true);
}

int tp_vmm_unmap_after(struct tp_vmm *vmm, uintptr_t va,
		       struct tp_chunk *const *chunks, size_t n,
		       struct tp_event *ev)
{
	int ret;

	if (!n || !aligned(vmm, va) || !whole_handles(vmm, va, chunks, n, true))
		return -EINVAL;
	/*
	 * Completed already: no reason to queue it, but where the driver
	 * thread would make the call anyway (and the caller none).
	 */
	if ((!ev || vmm->ops->event_query(vmm, ev) == 0) &&
	    vmm->deferred->mode == TP_DEFERRED_POLL) {
		ret = tp_vmm_do_unmap(vmm, va, chunks, n, true);
		if (!ret)
			tp_vmm_chunks_put(vmm, chunks, n);
		return ret;
	}
	lock(vmm);
	if (!vmm->ordered_reuse) {
		ret = tp_deferred_add(vmm, vmm->deferred, va, chunks, n, ev,
				      true);
		unlock(vmm);
		return ret;
	}
	/*
	 * Ordered reuse: the memory is free for work ordered after @ev, so
	 * it goes back to the pool now with @ev as its fence; only the
	 * mapping at @va waits for @ev (the old owner's work reads it).
	 */
	ret = tp_deferred_add(vmm, vmm->deferred, va, chunks, n, ev, false);
	if (!ret) {
		for (size_t i = 0; i < n; i += chunks[i]->pages) {
			if (chunks[i]->fence)
				tp_vmm_event_put(vmm, chunks[i]->fence);
			chunks[i]->fence = ev ? tp_vmm_event_get(ev) : NULL;
		}
		handles_at(vmm, va, chunks, n, false);
		vmm->stats.chunks_mapped -= n;
		tp_chunk_pool_put(vmm->pool, chunks, n);
	}
	unlock(vmm);
	return ret;
}

size_t tp_vmm_rescue(struct tp_vmm *vmm, uintptr_t va, size_t n,
		     struct tp_chunk **out)
{
	size_t got;

	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (!n || !aligned(vmm, va))
		return 0;
	lock(vmm);
	got = tp_deferred_rescue(vmm, vmm->deferred, va, n, out);
	unlock(vmm);
	return got;
}

int tp_vmm_chunks_order(struct tp_vmm *vmm, struct tp_chunk *const *c,
			size_t n, unsigned streams)
{
	struct tp_event *done = NULL;
	int ret;

	for (size_t i = 0; i < n; i += c[i]->pages) {
		struct tp_event *f = c[i]->fence;

		if (!f)
			continue;
		/* Handles of one free share their fence: one wait each. */
		if (f != done && tp_vmm_event_query(vmm, f) != 0) {
			if (streams & TP_ORDER_HOST) {
				ret = tp_vmm_event_sync(vmm, f);
				if (ret)
					return ret;
			}
			for (int s = 0; s < TP_NR_STREAMS; s++) {
				if (!(streams & (1u << s)))
					continue;
				ret = tp_vmm_stream_wait(vmm, (enum tp_stream)s,
							 f);
				if (ret)
					return ret;
			}
			done = f;
		}
	}
	for (size_t i = 0; i < n; i += c[i]->pages) {
		tp_vmm_event_put(vmm, c[i]->fence);
		c[i]->fence = NULL;
	}
	return 0;
}

size_t tp_vmm_reap(struct tp_vmm *vmm)
{
	size_t n;

	lock(vmm);
	n = tp_deferred_reap(vmm, vmm->deferred);
	if (vmm->pool && vmm->pool->ext)
		tp_extent_pool_refresh(vmm, vmm->pool->ext);
	unlock(vmm);
	return n;
}

int tp_vmm_reap_wait(struct tp_vmm *vmm)
{
	int ret;

	lock(vmm);
	ret = tp_deferred_wait_oldest(vmm, vmm->deferred);
	unlock(vmm);
	return ret;
}

/* --- copies ---------------------------------------------------------- */

int tp_vmm_copy_d2h(struct tp_vmm *vmm, void *host, uintptr_t va, size_t len,
		    enum tp_stream s)
{
	uint64_t t0;
	int ret;

	if ((unsigned)s >= TP_NR_STREAMS || !host)
		return -EINVAL;
	if (!len)
		return 0;
	if (s == TP_STREAM_COMPUTE)
		vmm->compute_work++;
	ret = tp_vmm_gate(vmm, s);
	if (ret)
		return ret;
	ret = tp_vmm_call_begin(vmm, TP_CALL_COPY, true, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->copy_d2h(vmm, host, va, len, s);
	tp_vmm_call_end(vmm, TP_CALL_COPY, t0, ret ? 0 : len);
	return ret;
}

int tp_vmm_copy_h2d(struct tp_vmm *vmm, uintptr_t va, const void *host,
		    size_t len, enum tp_stream s)
{
	uint64_t t0;
	int ret;

	if ((unsigned)s >= TP_NR_STREAMS || !host)
		return -EINVAL;
	if (!len)
		return 0;
	if (s == TP_STREAM_COMPUTE)
		vmm->compute_work++;
	ret = tp_vmm_gate(vmm, s);
	if (ret)
		return ret;
	ret = tp_vmm_call_begin(vmm, TP_CALL_COPY, true, &t0);
	if (ret)
		return ret;
	ret = vmm->ops->copy_h2d(vmm, va, host, len, s);
	tp_vmm_call_end(vmm, TP_CALL_COPY, t0, ret ? 0 : len);
	return ret;
}

/* --- events ---------------------------------------------------------- */

/* A new event from @create, counted as an event call. */
static struct tp_event *event_new(struct tp_vmm *vmm,
				  int (*create)(struct tp_vmm *,
						struct tp_event **))
{
	struct tp_event *ev = NULL;
	uint64_t t0;
	int ret;

	ret = tp_vmm_call_begin(vmm, TP_CALL_EVENT, true, &t0);
	if (!ret) {
		ret = create(vmm, &ev);
		tp_vmm_call_end(vmm, TP_CALL_EVENT, t0, 0);
	}
	if (ret) {
		errno = -ret;
		return NULL;
	}
	atomic_init(&ev->refs, 1);
	ev->stream = -1;
	return ev;
}

struct tp_event *tp_vmm_event_create(struct tp_vmm *vmm)
{
	return event_new(vmm, vmm->ops->event_create);
}

struct tp_event *tp_vmm_event_create_timed(struct tp_vmm *vmm)
{
	return event_new(vmm, vmm->ops->event_create_timed ?
			      vmm->ops->event_create_timed :
			      vmm->ops->event_create);
}

struct tp_event *tp_vmm_event_get(struct tp_event *ev)
{
	atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
	return ev;
}

void tp_vmm_event_put(struct tp_vmm *vmm, struct tp_event *ev)
{
	if (!ev)
		return;
	if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) == 1)
		vmm->ops->event_destroy(vmm, ev);
}

/* One counted event call; @inject as for every call that can fail. */
#define EVENT_CALL(vmm, expr)						\
	({								\
		uint64_t __t0 = 0;					\
		int __ret = tp_vmm_call_begin((vmm), TP_CALL_EVENT, true, &__t0); \
		if (!__ret) {						\
			__ret = (expr);					\
			tp_vmm_call_end((vmm), TP_CALL_EVENT, __t0, 0);	\
		}							\
		__ret;							\
	})

int tp_vmm_event_record(struct tp_vmm *vmm, struct tp_event *ev,
			enum tp_stream s)
{
	int ret;

	if ((unsigned)s >= TP_NR_STREAMS || !ev)
		return -EINVAL;
	ret = EVENT_CALL(vmm, vmm->ops->event_record(vmm, ev, s));
	if (!ret)
		ev->stream = (int)s;
	return ret;
}

int tp_vmm_stream_wait(struct tp_vmm *vmm, enum tp_stream s,
		       struct tp_event *ev)
{
	if ((unsigned)s >= TP_NR_STREAMS || !ev)
		return -EINVAL;
	if (s == TP_STREAM_COMPUTE)
		vmm->compute_work++;
	return EVENT_CALL(vmm, vmm->ops->stream_wait(vmm, s, ev));
}

int tp_vmm_event_query(struct tp_vmm *vmm, struct tp_event *ev)
{
	return EVENT_CALL(vmm, vmm->ops->event_query(vmm, ev));
}

int tp_vmm_event_sync(struct tp_vmm *vmm, struct tp_event *ev)
{
	uint64_t t0 = call_clock(vmm);
	int ret = tp_map_ahead_error(vmm->deferred);

	/* Behind a map that failed, the device waits for ever. */
	if (ret)
		return waited(vmm, t0, ret);
	return waited(vmm, t0, EVENT_CALL(vmm, vmm->ops->event_sync(vmm, ev)));
}

int tp_vmm_event_elapsed_ns(struct tp_vmm *vmm, struct tp_event *a,
			    struct tp_event *b, uint64_t *ns)
{
	if (!a || !b || !ns)
		return -EINVAL;
	if (!vmm->ops->event_elapsed_ns)
		return -EOPNOTSUPP;
	/* Not counted nor injected: it reads, it never changes a stream. */
	return vmm->ops->event_elapsed_ns(vmm, a, b, ns);
}

int tp_vmm_stream_sync(struct tp_vmm *vmm, enum tp_stream s)
{
	uint64_t t0 = call_clock(vmm);

	int ret = tp_map_ahead_error(vmm->deferred);

	if ((unsigned)s >= TP_NR_STREAMS)
		return waited(vmm, t0, -EINVAL);
	/* Behind a map that failed, the device waits for ever. */
	if (ret)
		return waited(vmm, t0, ret);
	return waited(vmm, t0, EVENT_CALL(vmm, vmm->ops->stream_sync(vmm, s)));
}

int tp_vmm_sync_all(struct tp_vmm *vmm)
{
	const char *why = wait_why;
	int s, ret;

	/* The maps made ahead, which the streams may not have waited for. */
	lock(vmm);
	ret = tp_map_ahead_wait(vmm, vmm->deferred);
	unlock(vmm);
	if (ret)
		return ret;
	for (s = 0; s < TP_NR_STREAMS; s++) {
		wait_why = why;
		ret = tp_vmm_stream_sync(vmm, (enum tp_stream)s);
		if (ret)
			return ret;
	}
	while ((ret = tp_vmm_reap_wait(vmm)) == 0)
		;
	/* And the handles released behind those unmaps. */
	lock(vmm);
	while (ret == -ENOENT &&
	       (ret = tp_deferred_wait_destroy(vmm, vmm->deferred)) == 0)
		;
	unlock(vmm);
	/* Fences of free memory are all complete now. */
	tp_vmm_reap(vmm);
	return ret == -ENOENT || ret == -EAGAIN ? 0 : ret;
}

/* --- host buffers, launches, time ------------------------------------ */

void *tp_vmm_host_alloc(struct tp_vmm *vmm, size_t len)
{
	uint64_t t0;
	void *p;
	int ret;

	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	ret = tp_vmm_call_begin(vmm, TP_CALL_HOST_ALLOC, true, &t0);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	p = vmm->ops->host_alloc(vmm, len);
	tp_vmm_call_end(vmm, TP_CALL_HOST_ALLOC, t0, p ? len : 0);
	if (!p && !errno)
		errno = ENOMEM;
	return p;
}

void *tp_vmm_host_prepare(struct tp_vmm *vmm, size_t len)
{
	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	if (!vmm->ops->host_prepare) {
		errno = ENOTSUP;
		return NULL;
	}
	return vmm->ops->host_prepare(vmm, len);
}

void *tp_vmm_host_prepared(struct tp_vmm *vmm, void *token, bool wait,
			   size_t *len)
{
	uint64_t t0 = call_clock(vmm), t_inject;
	void *p;
	int ret;

	*len = 0;
	p = vmm->ops->host_prepared(vmm, token, wait, len);
	if (!p) {
		if (errno != EAGAIN)
			tp_vmm_call_end(vmm, TP_CALL_HOST_ALLOC, t0, 0);
		return NULL;
	}
	/* Counted, and failed where injected, as the allocation it ends. */
	ret = tp_vmm_call_begin(vmm, TP_CALL_HOST_ALLOC, true, &t_inject);
	tp_vmm_call_end(vmm, TP_CALL_HOST_ALLOC, t0, ret ? 0 : *len);
	if (ret) {
		vmm->ops->host_free(vmm, p, *len);
		/* EAGAIN would say "not ready": the token is gone. */
		errno = ret == -EAGAIN ? ENOMEM : -ret;
		return NULL;
	}
	return p;
}

void tp_vmm_host_free(struct tp_vmm *vmm, void *p, size_t len)
{
	if (p)
		vmm->ops->host_free(vmm, p, len);
}

int tp_vmm_launch(struct tp_vmm *vmm, enum tp_stream s, uint64_t cost_ns,
		  int (*fn)(void *arg), void *arg)
{
	return tp_vmm_launch_op(vmm, s, NULL, TP_WORK_ANY, cost_ns, fn, arg);
}

int tp_vmm_launch_op(struct tp_vmm *vmm, enum tp_stream s, const char *name,
		     enum tp_vmm_work w, uint64_t cost_ns,
		     int (*fn)(void *arg), void *arg)
{
	int ret;

	if ((unsigned)s >= TP_NR_STREAMS)
		return -EINVAL;
	if (s == TP_STREAM_COMPUTE)
		vmm->compute_work++;
	ret = tp_vmm_gate_work(vmm, s, w);
	if (ret)
		return ret;
	if (!vmm->ops->launch)
		return fn ? fn(arg) : 0;
	return vmm->ops->launch(vmm, s, name, cost_ns, fn, arg);
}

void *tp_vmm_stream_handle(struct tp_vmm *vmm, enum tp_stream s)
{
	if ((unsigned)s >= TP_NR_STREAMS || !vmm->ops->stream_handle)
		return NULL;
	return vmm->ops->stream_handle(vmm, s);
}

uint64_t tp_vmm_now_ns(struct tp_vmm *vmm)
{
	return vmm->ops->now_ns(vmm);
}

int tp_vmm_op_ns(struct tp_vmm *vmm, const char *name,
		 const struct tp_op_work *w, uint64_t *ns)
{
	if (!vmm->ops->op_ns)
		return -ENOENT;
	return vmm->ops->op_ns(vmm, name, w, ns);
}

int tp_vmm_type_ns(struct tp_vmm *vmm, const struct tp_op_type *type,
		   const void *params, size_t params_len,
		   const size_t *in_bytes, unsigned n_in, uint64_t *ns)
{
	struct tp_op_work w = { 0 };

	if (!type->work || type->work(params, params_len, in_bytes, n_in, &w))
		return -ENOENT;
	return tp_vmm_op_ns(vmm, type->name, &w, ns);
}

double tp_vmm_remap_ns(struct tp_vmm *vmm, size_t pages, bool measured)
{
	const struct tp_vmm_call_stats *s = vmm->stats.call;
	size_t per = vmm->extent_max ? vmm->extent_max : 1;
	size_t handles = (pages + per - 1) / per;
	uint64_t bytes;

	if (!pages)
		return 0;
	/* Measured: the mean a handle cost so far, map to unmap. */
	if (measured && s[TP_CALL_MAP].handles && s[TP_CALL_UNMAP].handles)
		return (double)handles *
		       ((double)(s[TP_CALL_MAP].ns + s[TP_CALL_SET_ACCESS].ns) /
			(double)s[TP_CALL_MAP].handles +
			(double)s[TP_CALL_UNMAP].ns /
			(double)s[TP_CALL_UNMAP].handles);
	if (!vmm->ops->remap_handle_ns)
		return -1;
	bytes = (uint64_t)(pages / handles) * vmm->granularity;
	return (double)handles * vmm->ops->remap_handle_ns(vmm, bytes);
}

void tp_vmm_set_workspace_max(struct tp_vmm *vmm, uint64_t bytes)
{
	vmm->workspace_max = bytes;
}

uint64_t tp_vmm_workspace_max(const struct tp_vmm *vmm)
{
	return vmm->workspace_max;
}

void tp_vmm_set_op_math(struct tp_vmm *vmm, enum tp_op_math math)
{
	vmm->op_math = math;
}

enum tp_op_math tp_vmm_op_math(const struct tp_vmm *vmm)
{
	return vmm->op_math;
}

int tp_vmm_op_workspace(struct tp_vmm *vmm, const char *name,
			size_t largest, size_t *bytes)
{
	if (!vmm->ops->op_workspace)
		return -ENOENT;
	return vmm->ops->op_workspace(vmm, name, largest, bytes);
}

bool tp_vmm_has_data(const struct tp_vmm *vmm)
{
	return vmm->ops != &tp_vmm_sim_ops;
}

enum tp_device tp_vmm_device(const struct tp_vmm *vmm)
{
	return vmm->ops->device;
}
