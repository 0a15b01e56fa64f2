/* SPDX-License-Identifier: MIT */
/*
 * vmm: reserved virtual ranges backed by a pool of remappable physical
 * chunks, three streams ordered by events, and host swap buffers, on one of
 * three backends (cuda, host, sim). The pager is its only caller.
 *
 * Addresses are uintptr_t device virtual addresses. On the host backend
 * they are also valid CPU pointers; on cuda they are device pointers; on sim
 * they are numbers that must never be dereferenced.
 *
 * Nothing here is thread-safe unless a member says so: the pager serialises
 * calls. Completion of copies happens on backend threads (host) or the
 * device (cuda) and is observed only through events.
 *
 * Layer exception: kernels: the registry asks the sim's profile of a GPU
 * what workspace an op takes (tp_vmm_op_workspace()), and a model asks
 * its context's backend where the data is (tp_vmm_device()).
 *
 * One header, past the usual length: the backend ops table, the generic
 * layer's calls and the structs both see are the vmm's one interface.
 */
#ifndef TP_VMM_VMM_H
#define TP_VMM_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/list.h>

#include "vmm/va_arena.h"

#include "tpager.h"

struct tp_vmm;
struct tp_event;

/* The vmm.* keys of tpager.conf(5) that take names, in the order of
 * their values there. */
enum tp_vmm_backend_kind { TP_VMM_AUTO, TP_VMM_CUDA, TP_VMM_HOST, TP_VMM_SIM };
enum tp_vmm_mode { TP_VMM_MODE_CHUNKED, TP_VMM_MODE_CONTIGUOUS };
enum tp_vmm_mapping { TP_VMM_MAPPING_EXTENTS, TP_VMM_MAPPING_CHUNKS };
enum tp_vmm_map_ahead { TP_MAP_AHEAD_AUTO, TP_MAP_AHEAD_ON, TP_MAP_AHEAD_OFF };
enum tp_vmm_map_gate { TP_MAP_GATE_KERNELS, TP_MAP_GATE_HOST, TP_MAP_GATE_OPS };
enum tp_sim_profile_kind {
	TP_SIM_PROFILE_CUSTOM, TP_SIM_PROFILE_H200, TP_SIM_PROFILE_H100,
};

/*
 * The vmm's options: one member per vmm.* key of tpager.conf(5), which
 * says what each means. The context fills it from the configuration
 * (tp_ctx_vmm_conf()); the vmm sees no other layer's keys.
 */
struct tp_vmm_conf {
	enum tp_vmm_backend_kind backend;	/* vmm.backend */
	uint64_t chunk_size;			/* vmm.chunk_size */
	enum tp_vmm_mode mode;			/* vmm.mode */
	enum tp_vmm_mapping mapping;		/* vmm.mapping */
	uint64_t extent_max;			/* vmm.extent_max */
	int64_t device;				/* vmm.device */
	uint64_t device_memory;			/* vmm.device_memory */
	int64_t host_copy_threads;		/* vmm.host.copy_threads */
	int64_t cuda_fault_threads;		/* vmm.cuda.fault_threads */
	enum tp_sim_profile_kind sim_profile;	/* vmm.sim.profile */
	int64_t sim_map_ns;			/* vmm.sim.map_ns */
	int64_t sim_set_access_ns;		/* vmm.sim.set_access_ns */
	int64_t sim_unmap_ns;			/* vmm.sim.unmap_ns */
	uint64_t sim_driver_granule;		/* vmm.sim.driver_granule */
	double sim_driver_scale;		/* vmm.sim.driver_scale */
	int64_t sim_copy_latency_ns;		/* vmm.sim.copy_latency_ns */
	double sim_bandwidth;			/* vmm.sim.bandwidth */
	bool sim_sync;				/* vmm.sim.sync */
	uint32_t va_reserve;			/* vmm.va_reserve */
	uint32_t release_behind;		/* vmm.release_behind */
	enum tp_vmm_map_ahead map_ahead;	/* vmm.map_ahead */
	enum tp_vmm_map_gate map_gate;		/* vmm.map_gate */
};

/*
 * Reservations start and end on a multiple of this (or of the chunk size
 * if larger), the driver's 2 MiB granule: no two ranges share one, so an
 * address table keyed by it needs a node per 2 MiB of a range, however
 * small the chunks. Only address space is spent on the rounding.
 */
#define TP_VMM_VA_ALIGN (2u << 20)

enum tp_stream {
	TP_STREAM_COMPUTE,
	TP_STREAM_D2H,
	TP_STREAM_H2D,
	TP_NR_STREAMS,
};

/*
 * Which end of the pool a take prefers (vmm.mode = contiguous; Coop §3.4
 * cheap-tensor partitioning). The chunked pool has no ends and ignores it.
 */
enum tp_pool_side {
	TP_SIDE_LEFT,		/* lowest chunk indices: expensive tensors */
	TP_SIDE_RIGHT,		/* highest chunk indices: cheap tensors */
};

/* Access rights for set_access. */
#define TP_PROT_NONE	0u
#define TP_PROT_RW	3u

/*
 * A physical handle. On the chunked pool (vmm.mapping = chunks) each is
 * one chunk; on the extent pool it holds @pages chunks and backs that
 * many consecutive pages of one range. A handle maps whole: wherever the
 * vmm takes an array of chunks for a run of pages, it has one entry per
 * page, each handle repeated once per page it backs, and the run covers
 * whole handles.
 */
struct tp_chunk {
	uint64_t handle;	/* backend's: CUmemGenericAllocationHandle, memfd offset, id */
	uint32_t index;		/* chunked: position in the pool, 0..nr_chunks-1;
				 * extents: first chunk in the backend's
				 * offset space (the host's memfd) */
	uint32_t flags;		/* pool-private */
	uint32_t pages;		/* chunks it holds: 1 on the chunked pool */
	uintptr_t va;		/* the page its owner maps it at; 0: none */
	/*
	 * Stream-ordered reuse (extents): the last use by its previous
	 * owner, not yet complete (a reference), which whoever takes it
	 * orders its work after (tp_vmm_chunks_order()); and how many of
	 * that owner's mappings still wait for it to unmap them.
	 */
	struct tp_event *fence;
	unsigned old_maps;
	/* Times taken from the pool: a rescue checks no one took it since
	 * its old owner's mapping was left (tp_vmm_rescue()). */
	uint32_t takes;
	/*
	 * Unborn (vmm.map_ahead): the releases queued to make room for it,
	 * in the order they were queued, (lo, hi]: it is made after them.
	 */
	uint64_t after_lo, after_hi;
	struct tp_chunk *next;	/* chunked pool: free list link */
	struct cds_list_head lru;	/* extents: free (oldest first) or taken */
	struct cds_list_head bucket;	/* extents: free, by size */
	struct cds_list_head pend;	/* extents: free, fenced by a copy */
};

/* Kinds of backend call counted in the statistics and fault injection. */
enum tp_vmm_call {
	TP_CALL_RESERVE,
	TP_CALL_RELEASE,
	TP_CALL_CHUNK_CREATE,
	TP_CALL_CHUNK_DESTROY,
	TP_CALL_MAP,
	TP_CALL_SET_ACCESS,
	TP_CALL_UNMAP,
	TP_CALL_COPY,
	TP_CALL_EVENT,
	TP_CALL_HOST_ALLOC,
	TP_NR_CALLS,
};

/*
 * The backend vtable. Each implementation (backend_cuda.c, backend_host.c,
 * backend_sim.c) exports one const instance. The generic layer (vmm.c)
 * counts, times and fault-injects every call; backends never call each
 * other. All members return 0 or -errno unless stated otherwise.
 */
struct tp_vmm_ops {
	const char *name;
	/* Where the backend keeps the data: what the ops it runs compute on. */
	enum tp_device device;

	/*
	 * Open the device. Set vmm->granularity (the chunk size the backend
	 * needs: device granularity on cuda, vmm.chunk_size elsewhere) and
	 * vmm->device_bytes (total device memory; what 100% means).
	 * Return -ENODEV when the backend cannot run here (no driver, no
	 * device); nothing is left allocated then.
	 */
	int (*open)(struct tp_vmm *vmm, const struct tp_vmm_conf *conf);
	/* Release everything open() and later calls created. Never fails. */
	void (*close)(struct tp_vmm *vmm);

	/*
	 * Reserve @len bytes (a multiple of va_align) of virtual address
	 * space at an address aligned to vmm->va_align, with no physical
	 * memory behind it; touching it faults.
	 */
	int (*reserve)(struct tp_vmm *vmm, size_t len, uintptr_t *va);
	/* Give back a reservation; it must be fully unmapped. */
	int (*release)(struct tp_vmm *vmm, uintptr_t va, size_t len);

	/* Create the physical memory of handle @c, c->pages chunks (sets
	 * c->handle; c->index is its place in the offset space). */
	int (*chunk_create)(struct tp_vmm *vmm, struct tp_chunk *c);
	/* Destroy it; it must not be mapped anywhere. */
	void (*chunk_destroy)(struct tp_vmm *vmm, struct tp_chunk *c);

	/*
	 * Map the run of @n pages at @va, @va + granularity, ... from the
	 * per-page array @chunks (whole handles, each mapped whole at its
	 * first page). Access is not granted until set_access. On failure
	 * nothing of the run stays mapped.
	 */
	int (*map)(struct tp_vmm *vmm, uintptr_t va,
		   struct tp_chunk *const *chunks, size_t n);
	/* Grant @prot on the run of @n mapped pages at @va, in one call
	 * where the driver allows. */
	int (*set_access)(struct tp_vmm *vmm, uintptr_t va,
			  struct tp_chunk *const *chunks, size_t n,
			  unsigned prot);
	/*
	 * Unmap the run of @n pages at @va (whole handles); the range stays
	 * reserved and faults again. The caller guarantees no in-flight work
	 * touches it (see tp_vmm_unmap_after for the deferred form).
	 */
	int (*unmap)(struct tp_vmm *vmm, uintptr_t va,
		     struct tp_chunk *const *chunks, size_t n);

	/*
	 * Copy asynchronously on stream @s: device [@va, @va+@len) to host
	 * buffer @host (d2h) or back (h2d). Ordered after earlier work on @s
	 * and after events @s was made to wait on.
	 */
	int (*copy_d2h)(struct tp_vmm *vmm, void *host, uintptr_t va,
			size_t len, enum tp_stream s);
	int (*copy_h2d)(struct tp_vmm *vmm, uintptr_t va, const void *host,
			size_t len, enum tp_stream s);

	/* Events: a point in a stream's work. */
	int (*event_create)(struct tp_vmm *vmm, struct tp_event **ev);
	void (*event_destroy)(struct tp_vmm *vmm, struct tp_event *ev);
	/* Capture everything enqueued on @s so far. */
	int (*event_record)(struct tp_vmm *vmm, struct tp_event *ev,
			    enum tp_stream s);
	/* Work enqueued on @s later starts after @ev completes. Host not blocked. */
	int (*stream_wait)(struct tp_vmm *vmm, enum tp_stream s,
			   struct tp_event *ev);
	/* 0 when complete, -EAGAIN when still pending, other -errno on error.
	 * Thread-safe. */
	int (*event_query)(struct tp_vmm *vmm, struct tp_event *ev);
	/* Block the calling thread until @ev completes. Thread-safe. */
	int (*event_sync)(struct tp_vmm *vmm, struct tp_event *ev);
	/* Block until everything enqueued on @s has completed. */
	int (*stream_sync)(struct tp_vmm *vmm, enum tp_stream s);

	/*
	 * Optional: create an event that can be timed by event_elapsed_ns
	 * (cuda events are otherwise created without timing, which is
	 * cheaper to record). NULL: event_create's events can be timed.
	 */
	int (*event_create_timed)(struct tp_vmm *vmm, struct tp_event **ev);
	/*
	 * Store in *@ns the time between the moments the streams reached
	 * @a and @b (both recorded and complete; @b after @a): cuda asks the
	 * driver (cuEventElapsedTime, 0.5 us resolution), host keeps the
	 * host time at which an event's work had completed and it was
	 * recorded, sim takes the difference of virtual times. -EAGAIN when
	 * either has not completed, -EINVAL when one was never recorded.
	 * Never blocks. Thread-safe.
	 */
	int (*event_elapsed_ns)(struct tp_vmm *vmm, struct tp_event *a,
				struct tp_event *b, uint64_t *ns);

	/* Host swap buffers (pinned on cuda); NULL on failure. On sim a
	 * unique token that must not be dereferenced. */
	void *(*host_alloc)(struct tp_vmm *vmm, size_t len);
	void (*host_free)(struct tp_vmm *vmm, void *p, size_t len);
	/*
	 * Optional, both or neither: host swap obtained in two halves, the
	 * slow one off the caller's thread (cuda: mapped and faulted in,
	 * host: allocated and written, by a thread of their own; sim: time
	 * on a clock of its own).
	 * host_prepare starts on @len bytes and returns a token, or NULL
	 * with errno set. host_prepared finishes it on the caller's thread
	 * once ready (cuda registers it with the driver) and returns what
	 * host_alloc would have, its length in *@len; NULL with errno
	 * EAGAIN, the token kept, when it is not ready and !@wait; any
	 * other NULL: failed, the token gone.
	 */
	void *(*host_prepare)(struct tp_vmm *vmm, size_t len);
	void *(*host_prepared)(struct tp_vmm *vmm, void *token, bool wait,
			       size_t *len);

	/*
	 * Run @fn(@arg) as work on stream @s (an op's launch on the host
	 * backend runs at once on the caller's thread after waiting for @s;
	 * sim advances @s by @cost_ns and does not call @fn, which would be
	 * given addresses that must not be dereferenced; cuda enqueues
	 * nothing: the launch function enqueues its own kernels on the
	 * stream handle). @name: the op's type, or NULL (work of no op's;
	 * sim charges the host's time to issue it by it).
	 * Optional; NULL means run @fn directly.
	 */
	int (*launch)(struct tp_vmm *vmm, enum tp_stream s, const char *name,
		      uint64_t cost_ns, int (*fn)(void *arg), void *arg);
	/*
	 * Optional: the device time of op @name doing work @w by the
	 * backend's model of its device (the sim's profile).
	 * Return 0 with *@ns set, or -ENOENT when it has none.
	 */
	int (*op_ns)(struct tp_vmm *vmm, const char *name,
		     const struct tp_op_work *w, uint64_t *ns);
	/*
	 * Optional: the scratch op @name takes on the modelled device, whose
	 * largest input or output is @largest bytes (the sim's profiles:
	 * what the GPU's convolution algorithms chose). -ENOENT: none.
	 */
	int (*op_workspace)(struct tp_vmm *vmm, const char *name,
			    size_t largest, size_t *bytes);
	/*
	 * Optional: what unmapping one handle of @bytes and mapping it again
	 * (map and set access) costs the host, by the backend's model of its
	 * driver (the sim's profiles); negative: no model.
	 */
	double (*remap_handle_ns)(struct tp_vmm *vmm, uint64_t bytes);
	/*
	 * Optional (sim): the library's driver thread, played on a clock of
	 * the backend's own. After worker_begin(@after, @queued), calls are
	 * charged to that clock, from when the job was queued (the caller's
	 * time @queued), @after completes and the thread is free, whichever
	 * is latest; worker_end() returns to the caller's clock and
	 * says when the calls are done there; wait_until() has the caller
	 * wait for such a time. plays_worker() says whether the backend
	 * plays the thread now. Without them a real thread does the work.
	 */
	bool (*plays_worker)(struct tp_vmm *vmm);
	/*
	 * Optional (sim): which of the played thread's clocks the worker
	 * calls use: 0 for its releases and unmaps, 1 for the maps it makes
	 * ahead, which a driver thread does first, as they are queued,
	 * whatever the others wait for (map_ahead.h).
	 */
	void (*worker_lane)(struct tp_vmm *vmm, unsigned lane);
	void (*worker_begin)(struct tp_vmm *vmm, struct tp_event *after,
			     uint64_t queued);
	uint64_t (*worker_end)(struct tp_vmm *vmm);
	void (*wait_until)(struct tp_vmm *vmm, uint64_t t);
	/* Optional (sim): when @ev completes on its stream's clock. */
	int (*event_when)(struct tp_vmm *vmm, struct tp_event *ev,
			  uint64_t *t);
	/*
	 * Optional: whether the library's driver thread may make maps
	 * ahead here (vmm.map_ahead; sim: with a profile, whose played
	 * thread it is). NULL: it may.
	 */
	bool (*can_map_ahead)(struct tp_vmm *vmm);
	/*
	 * Optional, all or none (map_posted and map_spare may be NULL
	 * where the driver thread is played: its clock says when a job is
	 * done, and a played job's failure is the caller's at once):
	 * streams that wait on the device for the maps made ahead
	 * (vmm.map_gate). map_gate_open() readies what the
	 * waits need (cuda: a word of pinned host memory the device reads,
	 * and a spare handle of one page); -EOPNOTSUPP or another error
	 * leaves the waits to the host. map_posted() says, from the
	 * driver thread, that job @seq and every one before it are made
	 * (cuda stores @seq in the word). stream_wait_map() makes the work
	 * enqueued on @s later start once job @seq is posted (cuda:
	 * cuStreamWaitValue32 on the word; sim: once @s's clock reaches @t,
	 * when the played thread made it); only kernels may be enqueued
	 * behind it, nothing the driver checks at the enqueue.
	 * map_spare() maps the spare handle at each of the @n pages at @va
	 * and grants access: where the driver thread failed a map the
	 * device already waits for, the work behind it then finds memory
	 * rather than none, and the stream is not held forever.
	 */
	int (*map_gate_open)(struct tp_vmm *vmm);
	void (*map_posted)(struct tp_vmm *vmm, uint32_t seq);
	int (*stream_wait_map)(struct tp_vmm *vmm, enum tp_stream s,
			       uint32_t seq, uint64_t t);
	int (*map_spare)(struct tp_vmm *vmm, uintptr_t va, size_t n);
	/* The native stream handle for launch functions (CUstream), or NULL. */
	void *(*stream_handle)(struct tp_vmm *vmm, enum tp_stream s);

	/*
	 * Monotonic time in ns for staleness and costs: host time on host
	 * and cuda, the virtual clock of the caller on sim (deterministic).
	 */
	uint64_t (*now_ns)(struct tp_vmm *vmm);
};

extern const struct tp_vmm_ops tp_vmm_cuda_ops;
extern const struct tp_vmm_ops tp_vmm_host_ops;
extern const struct tp_vmm_ops tp_vmm_sim_ops;

/* Per-kind counters of backend calls. */
struct tp_vmm_call_stats {
	uint64_t calls;
	uint64_t ns;		/* host time spent in the call (the sim's
				 * virtual clock on sim) */
	uint64_t units;		/* chunks mapped/unmapped, bytes copied */
	uint64_t handles;	/* map, set access, unmap: handles touched */
};

struct tp_vmm_stats {
	struct tp_vmm_call_stats call[TP_NR_CALLS];
	/* of the driver calls, those the driver thread made */
	uint64_t bg_calls, bg_ns;
	uint64_t chunks_mapped;		/* now */
	uint64_t chunks_peak;
	uint64_t chunks_created;	/* in live handles */
	uint64_t handles;		/* live handles */
	uint64_t handles_created;	/* ever */
	uint64_t handles_released;	/* to re-carve the budget */
	uint64_t recarves;		/* takes that re-carved */
	/* in handles released behind, not yet gone (vmm.release_behind) */
	uint64_t chunks_dying;
	/* most chunks in device memory at once: live handles and dying */
	uint64_t chunks_device_peak;
	uint64_t ranges_reserved;	/* now */
	uint64_t deferred_unmaps;	/* pending now */
	uint64_t deferred_releases;	/* ranges waiting on their unmaps */
	/* runs mapped ahead by the driver thread (vmm.map_ahead) */
	uint64_t maps_ahead;
	/* waits for them put on a stream, the map not done at the work */
	uint64_t gate_waits;
	/* of those, the waits the device made instead (vmm.map_gate) */
	uint64_t gate_device;
};

/*
 * Who watches the calls made to the backend (the trace, stats.trace):
 * @driver hears of every reserve, release, handle creation and release,
 * map, set access, unmap and host allocation (pinned memory, whose
 * units it is not told) once it returned, @wait of every time the
 * caller blocked on the device (an event or a stream sync), with the
 * backend's host clock at either end. Called on the thread that made the
 * call.
 */
struct tp_vmm_observer {
	/* @background: made by the library's driver thread (possibly from
	 * it: the observer locks what it shares with the caller's thread) */
	void (*driver)(void *priv, enum tp_vmm_call k, uint64_t t0,
		       uint64_t t1, uint64_t units, bool background);
	void (*wait)(void *priv, uint64_t t0, uint64_t t1, const char *why);
	/*
	 * Optional: the caller's thread waited for maps made ahead from
	 * @t0 to @t1 before it issued work on stream @s. Caller's thread.
	 */
	void (*gate)(void *priv, enum tp_stream s, uint64_t t0, uint64_t t1);
	void *priv;
};

/*
 * One open backend and its chunk pool. Fields other than those documented
 * as public are private to vmm/.
 */
struct tp_vmm {
	const struct tp_vmm_ops *ops;
	void *priv;			/* backend state */
	size_t granularity;		/* chunk size, bytes */
	size_t va_align;		/* reservations start and end on it */
	uint64_t device_bytes;		/* total device memory */
	size_t nr_chunks;		/* pool budget, in chunks */
	int mapping;			/* enum tp_vmm_mapping */
	/*
	 * Memory left behind work still in flight goes back to the pool at
	 * once, fenced by that work, instead of after it (extents).
	 */
	bool ordered_reuse;
	size_t extent_max;		/* largest handle, chunks: 1 with
					 * vmm.mapping = chunks */
	uint32_t release_behind;	/* percent of the budget */
	uint64_t workspace_max;		/* an op's scratch, bytes; 0: any */
	enum tp_op_math op_math;	/* vmm.math */
	/*
	 * What a copy over the host link achieves each way, bytes per ns,
	 * as the backend knows it before the library copies anything: the
	 * sim's link, the cuda backend's probe at open; 0: unknown (host).
	 */
	double link_bytes_per_ns;
	int map_ahead;			/* enum tp_vmm_map_ahead */
	int map_gate;			/* enum tp_vmm_map_gate */
	struct tp_vmm_stats stats;
	struct tp_chunk_pool *pool;
	struct tp_deferred *deferred;	/* unmaps waiting on events */
	/* Address space reserved once (va_arena.h), when arena_len. */
	size_t arena_len;		/* to reserve at the first range */
	bool arena_on;
	struct tp_va_arena arena;
	const struct tp_vmm_observer *obs;	/* public: NULL or a watcher */
	/*
	 * Public: work issued to the compute stream so far (launches,
	 * copies, waits), a count that tells whether an event recorded
	 * there earlier still covers everything issued.
	 */
	uint64_t compute_work;
	/*
	 * Fault injection (tp_vmm_fail_at). Present in every build, so the
	 * layout does not depend on whether a file saw config.h first.
	 */
	long fail_at;			/* the Nth counted call fails; 0: off */
	long calls_counted;
	int fail_errno;
};

/* --- The generic layer (vmm.c): what the pager calls. --------------- */

/*
 * tp_vmm_observe() - install @obs (NULL: none). Returns once the driver
 * thread is between jobs: no call of the old observer is in progress.
 */
void tp_vmm_observe(struct tp_vmm *vmm, const struct tp_vmm_observer *obs);

/*
 * Open the backend named by conf->backend (auto: cuda when a device is
 * usable, else host). The pool is not created yet (its budget may be a
 * percent of device memory). Return NULL with errno set on failure.
 */
struct tp_vmm *tp_vmm_open(const struct tp_vmm_conf *conf);
void tp_vmm_close(struct tp_vmm *vmm);

/*
 * Create the chunk pool with a budget of @budget_bytes (rounded down to
 * whole chunks, at least one): one handle per chunk (vmm.mapping =
 * chunks), or handles sized to the runs they back (extents). Handles are
 * created lazily up to the budget and recycled. Return 0, -EINVAL for a
 * zero budget.
 */
int tp_vmm_pool_create(struct tp_vmm *vmm, uint64_t budget_bytes);

/*
 * Take the backing of a run of @n consecutive pages into @out, one entry
 * per page (a handle of several chunks repeated once per page it backs).
 * Beyond the budget: -ENOMEM and the pool is unchanged (no partial take).
 * First reaps completed deferred unmaps.
 */
int tp_vmm_chunks_take(struct tp_vmm *vmm, struct tp_chunk **out, size_t n);
/*
 * vmm.mode = contiguous (contig_pool.c): make the pool hand out each take
 * as one run of contiguous chunk indices, best fit. Only before the first
 * take, and not on cuda (whose pool is the driver's). Return 0, -EBUSY
 * when chunks were taken, -EOPNOTSUPP on cuda, -ENOMEM.
 */
int tp_vmm_pool_set_contiguous(struct tp_vmm *vmm);
/* Whether the pool is contiguous. */
bool tp_vmm_pool_contiguous(const struct tp_vmm *vmm);
/*
 * tp_vmm_chunks_take() preferring end @side of a contiguous pool; on a
 * contiguous pool the chunks taken are consecutive in index order.
 */
int tp_vmm_chunks_take_side(struct tp_vmm *vmm, struct tp_chunk **out,
			    size_t n, enum tp_pool_side side);
/* Whether a take of @n would find room now (contiguous: a long enough
 * free run; chunked: enough free chunks). */
bool tp_vmm_chunks_fit(const struct tp_vmm *vmm, size_t n);
/*
 * An allocation of @n chunks found no room (tp_vmm_chunks_fit() false):
 * on a contiguous pool with @n chunks free in total, a fragmentation
 * sample. Call once per allocation.
 */
void tp_vmm_frag_sample(struct tp_vmm *vmm, size_t n);
/* Fragmentation rate in ppm (contig_pool.h); 0 on a chunked pool. */
uint64_t tp_vmm_frag_ppm(const struct tp_vmm *vmm);
/*
 * The free runs of a contiguous pool in index order, as (start, len)
 * pairs through @fn; nothing on a chunked pool. For Coop's window.
 */
void tp_vmm_free_runs(const struct tp_vmm *vmm,
		      void (*fn)(void *arg, size_t start, size_t len),
		      void *arg);
/* tp_vmm_chunks_order(): the caller's thread touches the memory too. */
#define TP_ORDER_HOST	(1u << TP_NR_STREAMS)

/**
 * tp_vmm_chunks_order() - order the work of the streams in @streams (a
 * mask of 1u << enum tp_stream) after the last use of the taken run @c
 * of @n pages by its handles' previous owners (vmm.ordered_reuse: a
 * handle may come back to the pool while work of its old owner is still
 * queued). Call after a take, before any stream touches the run: the
 * fences are dropped then. Blocks the host only with TP_ORDER_HOST (the
 * caller itself will touch the memory), until that work is done.
 * Return: 0, or the event call's error (the fences stay).
 */
int tp_vmm_chunks_order(struct tp_vmm *vmm, struct tp_chunk *const *c,
			size_t n, unsigned streams);
/* Return the handles of a per-page array of @n entries (whole handles)
 * that are not mapped anywhere. */
void tp_vmm_chunks_put(struct tp_vmm *vmm, struct tp_chunk *const *c, size_t n);
/* Free chunks now (not counting those waiting on deferred unmaps). */
size_t tp_vmm_chunks_free(const struct tp_vmm *vmm);
/*
 * Chunks that will come back once pending deferred unmaps complete; with
 * ordered reuse, free ones fenced by copies in flight, which a take can
 * have at the price of its streams waiting for those copies.
 */
size_t tp_vmm_chunks_pending(const struct tp_vmm *vmm);
/* Whether a take of @n succeeds now, pending chunks it may have too. */
bool tp_vmm_chunks_takeable(const struct tp_vmm *vmm, size_t n);

/*
 * Reserve a range of @len bytes (a multiple of the chunk size) at an
 * address aligned to vmm->va_align; the reservation runs to the next
 * multiple of va_align, and the tail past @len is never mapped.
 */
int tp_vmm_reserve(struct tp_vmm *vmm, size_t len, uintptr_t *va);
/*
 * Release a reserved range. When deferred unmaps are still pending over
 * it, the release is deferred too: done when the last of them is reaped
 * (ranges_reserved counts it until then). Never synchronises the device.
 */
int tp_vmm_release(struct tp_vmm *vmm, uintptr_t va, size_t len);

/*
 * Map the run of @n pages at @va from the per-page array @c (whole
 * handles not mapped anywhere) and grant read/write, batching the run
 * into one map and one set_access call. A deferred unmap still pending
 * over the range is completed first (waiting on its event), so a page is
 * never mapped over a live mapping. On failure nothing stays mapped.
 * -EINVAL when @c does not hold whole handles.
 */
int tp_vmm_map(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
	       size_t n);
/**
 * tp_vmm_map_ahead() - tp_vmm_map(), made by the library's driver thread
 * where vmm.map_ahead is on: the call returns once the map is queued,
 * and work issued on a stream (launches, copies) before it is done waits
 * for it: on the host for work the driver checks when it is enqueued (a
 * copy's addresses, a memset's, a library call's that makes them), on
 * the device for an op's kernels (tp_vmm_gate_work()). The run is the
 * caller's as if mapped: unmapping it, at once or after an event, comes
 * after the map.
 * Fault injection counts the map and the access grant here, on the
 * caller's thread. Elsewhere it is tp_vmm_map(). Return: as tp_vmm_map();
 * a failure of the driver thread's calls is the device's error, which
 * every later sync and stream work returns (-EIO at least).
 */
int tp_vmm_map_ahead(struct tp_vmm *vmm, uintptr_t va,
		     struct tp_chunk *const *c, size_t n);
/*
 * tp_vmm_gate() - before work is issued on @s by any means: the caller
 * waits until every map made ahead so far is made (launches and copies
 * through the vmm do this themselves). Return: 0, or the error of a map
 * that failed.
 */
int tp_vmm_gate(struct tp_vmm *vmm, enum tp_stream s);

/* What work about to be issued on a stream enqueues (tp_vmm_gate_work). */
enum tp_vmm_work {
	/* Anything: copies, memsets, a caller's own calls. */
	TP_WORK_ANY,
	/* An op's launch, not in place, that may call libraries. */
	TP_WORK_OP,
	/* An op's launch of kernels alone (TP_OP_KERNELS_ONLY), not in
	 * place. */
	TP_WORK_KERNELS,
};

/*
 * tp_vmm_gate_work() - tp_vmm_gate() before work @w: where the backend's
 * streams can wait on the device for maps made ahead and vmm.map_gate
 * lets @w (kernels: TP_WORK_KERNELS; ops: TP_WORK_OP too), the stream @s
 * is made to wait for them there and the caller goes on; else the caller
 * waits. Return: 0, or the error of a map that failed (known so far: one
 * the device waits for may fail later, and the next sync says so).
 */
int tp_vmm_gate_work(struct tp_vmm *vmm, enum tp_stream s, enum tp_vmm_work w);
/* Unmap the run of @n pages at @va, backed by the per-page array @c, at
 * once: the caller knows nothing in flight touches them. -EINVAL when
 * the run does not cover whole handles mapped there. */
int tp_vmm_unmap(struct tp_vmm *vmm, uintptr_t va, struct tp_chunk *const *c,
		 size_t n);

/*
 * Unmap the run of @n pages at @va (the per-page array @chunks, whole
 * handles) and return its handles to the pool once @ev has completed
 * (NULL, or an event already complete: at once). Until then the pages
 * stay mapped and count in tp_vmm_chunks_pending() ; with ordered reuse
 * the handles go back at once instead, fenced by @ev (a taker orders its
 * work after it, tp_vmm_chunks_order()), and only the mapping at @va
 * waits for @ev. Never synchronises the device; pending
 * unmaps are reaped by tp_vmm_reap() and by chunk takes. @ev is owned by
 * the caller and must stay alive until the unmap is reaped: the vmm takes
 * a reference through tp_vmm_event_get().
 */
int tp_vmm_unmap_after(struct tp_vmm *vmm, uintptr_t va,
		       struct tp_chunk *const *chunks, size_t n,
		       struct tp_event *ev);
/**
 * tp_vmm_rescue() - take back the memory still mapped at the run of @n
 * pages at @va: each pending unmap_after that lies whole within the run,
 * that no one has begun to unmap and whose handles no one has taken since
 * is cancelled, and its handles are the run's again, mapped where they
 * were, with the bytes they held. @out[i] gets page i's handle, or NULL
 * where nothing came back. What a taker would have ordered its work
 * after is not waited for: the old owner's last work read the memory or
 * wrote what it holds, and only a copy out of it may still run.
 * Return: the pages rescued.
 */
size_t tp_vmm_rescue(struct tp_vmm *vmm, uintptr_t va, size_t n,
		     struct tp_chunk **out);
/* Complete every deferred unmap whose event has completed; returns count. */
size_t tp_vmm_reap(struct tp_vmm *vmm);
/* Wait for the oldest pending deferred unmap (used when the pool is empty
 * but chunks are on their way back). -ENOENT when none is pending. */
int tp_vmm_reap_wait(struct tp_vmm *vmm);

/* Copies and events: counted wrappers over the ops. */
int tp_vmm_copy_d2h(struct tp_vmm *vmm, void *host, uintptr_t va, size_t len,
		    enum tp_stream s);
int tp_vmm_copy_h2d(struct tp_vmm *vmm, uintptr_t va, const void *host,
		    size_t len, enum tp_stream s);

/* Events are reference-counted: get/put; create returns one reference. */
struct tp_event *tp_vmm_event_create(struct tp_vmm *vmm);
struct tp_event *tp_vmm_event_get(struct tp_event *ev);
void tp_vmm_event_put(struct tp_vmm *vmm, struct tp_event *ev);
int tp_vmm_event_record(struct tp_vmm *vmm, struct tp_event *ev,
			enum tp_stream s);
int tp_vmm_stream_wait(struct tp_vmm *vmm, enum tp_stream s,
		       struct tp_event *ev);
int tp_vmm_event_query(struct tp_vmm *vmm, struct tp_event *ev);
int tp_vmm_event_sync(struct tp_vmm *vmm, struct tp_event *ev);
int tp_vmm_stream_sync(struct tp_vmm *vmm, enum tp_stream s);
/*
 * What the calling thread's next event or stream sync waits for (a string
 * that lives as long as the program: a literal), told to the observer
 * with the wait: the trace names the wait by it. Taken by that sync, so
 * a wait without one is unnamed.
 */
void tp_vmm_wait_why(const char *why);

/**
 * tp_vmm_event_create_timed() - create an event usable by
 * tp_vmm_event_elapsed_ns() (one reference, like tp_vmm_event_create).
 * @vmm: the vmm.
 *
 * Return: the event, or NULL with errno set.
 */
struct tp_event *tp_vmm_event_create_timed(struct tp_vmm *vmm);

/**
 * tp_vmm_event_elapsed_ns() - time between two completed timed events.
 * @vmm: the vmm.
 * @a: the earlier event, created by tp_vmm_event_create_timed().
 * @b: the later event, likewise.
 * @ns: where the elapsed nanoseconds go (0 if @b was reached before @a).
 *
 * Never synchronises: the caller queries @b (or waits) first.
 *
 * Return: 0; -EAGAIN when @a or @b has not completed (nothing stored);
 * -EINVAL for a NULL argument or an event never recorded; -EIO on a
 * backend error.
 */
int tp_vmm_event_elapsed_ns(struct tp_vmm *vmm, struct tp_event *a,
			    struct tp_event *b, uint64_t *ns);
/* Wait for all streams, every deferred unmap and every release behind. */
int tp_vmm_sync_all(struct tp_vmm *vmm);

void *tp_vmm_host_alloc(struct tp_vmm *vmm, size_t len);
void tp_vmm_host_free(struct tp_vmm *vmm, void *p, size_t len);
/*
 * tp_vmm_host_prepare() - start obtaining @len bytes of host swap off the
 * caller's thread. Return: a token for tp_vmm_host_prepared(), or NULL
 * with errno set (ENOTSUP: the backend cannot; then tp_vmm_host_alloc()).
 */
void *tp_vmm_host_prepare(struct tp_vmm *vmm, size_t len);
/*
 * tp_vmm_host_prepared() - the memory of @token, as tp_vmm_host_alloc()
 * returns it (freed by tp_vmm_host_free() with *@len), counted as a host
 * allocation of what the caller waited and spent. Return: NULL with errno
 * EAGAIN (the token kept) when it is not ready and !@wait; NULL with
 * another errno when it failed (the token gone).
 */
void *tp_vmm_host_prepared(struct tp_vmm *vmm, void *token, bool wait,
			   size_t *len);


int tp_vmm_launch(struct tp_vmm *vmm, enum tp_stream s, uint64_t cost_ns,
		  int (*fn)(void *arg), void *arg);
/* tp_vmm_launch() of op @name's work (NULL: of no op's), work @w. */
int tp_vmm_launch_op(struct tp_vmm *vmm, enum tp_stream s, const char *name,
		     enum tp_vmm_work w, uint64_t cost_ns,
		     int (*fn)(void *arg), void *arg);
void *tp_vmm_stream_handle(struct tp_vmm *vmm, enum tp_stream s);
uint64_t tp_vmm_now_ns(struct tp_vmm *vmm);

/**
 * tp_vmm_op_ns() - the device time of op @name doing work @w, by the
 * backend's model of its device (a convolution's time depends on the
 * algorithm tp_vmm_workspace_max() leaves it).
 * Return: 0 with *@ns set; -ENOENT when the backend has no model (the
 * caller keeps its own estimate).
 */
int tp_vmm_op_ns(struct tp_vmm *vmm, const char *name,
		 const struct tp_op_work *w, uint64_t *ns);
/*
 * tp_vmm_type_ns() - tp_vmm_op_ns() of an op of @type on inputs of
 * @in_bytes, its work as the type describes it: -ENOENT also where the
 * type describes none.
 */
int tp_vmm_type_ns(struct tp_vmm *vmm, const struct tp_op_type *type,
		   const void *params, size_t params_len,
		   const size_t *in_bytes, unsigned n_in, uint64_t *ns);

/**
 * tp_vmm_remap_ns() - what unmapping a run of @pages pages and mapping it
 * again costs the host, in the handles the pool backs such a run with
 * (of up to extent_max chunks): per handle as measured so far on a
 * device (@measured, once calls were made), else by the backend's model
 * (the sim's profile). Return: ns, or a negative value when neither is
 * known (the caller keeps its own estimate).
 */
double tp_vmm_remap_ns(struct tp_vmm *vmm, size_t pages, bool measured);

/**
 * tp_vmm_op_workspace() - the scratch op @name takes on the backend's
 * model of its device, whose largest input or output is @largest bytes:
 * its fastest algorithm's, else, when that is above
 * tp_vmm_workspace_max(), a leaner one's.
 * Return: 0 with *@bytes set; -ENOENT when the backend has no model.
 */
int tp_vmm_op_workspace(struct tp_vmm *vmm, const char *name,
			size_t largest, size_t *bytes);

/*
 * The most scratch one op's algorithm may take (vmm.workspace_max, in
 * bytes once the budget is known; 0: any).
 */
void tp_vmm_set_workspace_max(struct tp_vmm *vmm, uint64_t bytes);
uint64_t tp_vmm_workspace_max(const struct tp_vmm *vmm);
/*
 * The math an op's products may use on the device (vmm.math), set once
 * by the context: launches carry it, and the convolutions' choice of
 * algorithm (and so their workspace) depends on it. The sim's profiles
 * price FP32 only.
 */
void tp_vmm_set_op_math(struct tp_vmm *vmm, enum tp_op_math math);
enum tp_op_math tp_vmm_op_math(const struct tp_vmm *vmm);

/* True when the backend holds real data (host, cuda); false on sim. */
bool tp_vmm_has_data(const struct tp_vmm *vmm);
/* Where the backend keeps the data (its ops' device). */
enum tp_device tp_vmm_device(const struct tp_vmm *vmm);

/**
 * tp_vmm_handle_first() - the page of the range at @va where handle @c,
 * mapped in that range, starts.
 */
static inline size_t tp_vmm_handle_first(const struct tp_vmm *vmm,
					 uintptr_t va,
					 const struct tp_chunk *c)
{
	return (c->va - va) / vmm->granularity;
}

/* Round @bytes up to whole chunks. */
static inline size_t tp_vmm_chunks_for(const struct tp_vmm *vmm, size_t bytes)
{
	return (bytes + vmm->granularity - 1) / vmm->granularity;
}

#ifdef TP_FAULT_INJECTION
/*
 * Test-only: make the @nth counted backend call from now fail with
 * -@err (EIO if 0), once; @nth = 0 turns it off. Every call that can
 * fail counts (reserve, release, chunk creation, map, set_access, unmap,
 * copies, event create/record/wait/query/sync, stream sync, host_alloc);
 * calls that undo a failed step and the unmaps of reaped deferred
 * entries are never failed, so that cleanup cannot fail in turn.
 * vmm->calls_counted tells how many calls were counted so far.
 */
void tp_vmm_fail_at(struct tp_vmm *vmm, long nth, int err);
#endif

#endif /* TP_VMM_VMM_H */
