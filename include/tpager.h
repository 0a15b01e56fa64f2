/* SPDX-License-Identifier: MIT */
/*
 * tpager: paged GPU memory for deep-learning training.
 *
 * Every tensor lives in its own reserved range of device virtual addresses;
 * physical memory is a pool of fixed-size chunks mapped into, and out of,
 * those ranges. Pages of a tensor are evicted (regenerated later by
 * replaying the ops that made them), offloaded to host swap, prefetched
 * back and split, while an address given to the caller never changes
 * (a tensor whose address no one was given may come back elsewhere after
 * an eviction: pager.move_evicted).
 *
 * Conventions: functions that act return 0 or a negative errno; functions
 * that construct return a pointer, or NULL with errno set. A call that
 * fails leaves every tensor as it was. All calls on one context must come
 * from one thread at a time (the caller's thread runs the ops); the library
 * runs its own copy and prefetch threads internally.
 */
#ifndef TPAGER_H
#define TPAGER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(TP_API)
#define TP_API __attribute__((visibility("default")))
#elif !defined(TP_API)
#define TP_API
#endif

#define TPAGER_VERSION_MAJOR 0
#define TPAGER_VERSION_MINOR 1

struct tp_ctx;
struct tp_tensor;

/* Access modes for tp_tensor_acquire(). */
#define TP_READ		(1u << 0)
#define TP_WRITE	(1u << 1)
#define TP_RW		(TP_READ | TP_WRITE)

/*
 * Tensor flags (tp_tensor_create). A tensor not produced by an op is
 * uncomputable whether or not TP_UNCOMPUTABLE is given: it can be offloaded,
 * never evicted. The pinning flags are DELTA's (§4.3).
 */
#define TP_UNCOMPUTABLE		(1u << 0)
#define TP_EVICT_PINNED		(1u << 1)	/* never evicted: offload only */
#define TP_OFFLOAD_PINNED	(1u << 2)	/* never offloaded: evict only */
#define TP_NO_PAGING		(1u << 3)	/* never leaves device memory */
/*
 * Scratch: its contents need not survive from one acquire to the next
 * (an op's workspace). It leaves by dropping its pages, without a copy
 * or a recompute, and comes back unwritten.
 */
#define TP_SCRATCH		(1u << 4)
/* What the tensor is, for traces and reports (no effect on paging). */
#define TP_KIND_INPUT		(1u << 8)
#define TP_KIND_PARAM		(1u << 9)
#define TP_KIND_GRAD		(1u << 10)
#define TP_KIND_OPTSTATE	(1u << 11)
#define TP_KIND_ACT		(1u << 12)
#define TP_KIND_WORKSPACE	(1u << 13)

/* Errors beyond errno: tp_strerror() knows both. */
#define TP_ERR_BASE		4096
#define TP_ENOREGEN		(TP_ERR_BASE + 1)	/* lineage cannot regenerate */
#define TP_EDEPTH		(TP_ERR_BASE + 2)	/* recompute depth bound hit */
#define TP_EDEVICE		(TP_ERR_BASE + 3)	/* backend/driver failure */
#define TP_EWORK		(TP_ERR_BASE + 4)	/* paging work bound hit */

/**
 * tp_ctx_create() - create a context: backend, chunk pool, pager, policy.
 * @opts: "key=value,key=value" configuration (see tpager.conf(5)) applied
 *        after /etc/tpager.conf, $TPAGER_CONF and $TPAGER_OPTS; or NULL.
 *
 * Return: the context, or NULL with errno set (EINVAL for a configuration
 * it did not understand, the message going to the log callback; ENODEV when
 * the requested backend has no device; ENOMEM).
 */
TP_API struct tp_ctx *tp_ctx_create(const char *opts);

/**
 * tp_ctx_destroy() - wait for all copies, free every tensor and the context.
 */
TP_API void tp_ctx_destroy(struct tp_ctx *ctx);

/* --- Tensors ---------------------------------------------------------- */

/**
 * tp_tensor_create() - reserve a tensor of @bytes; no memory is mapped yet.
 * @flags: TP_UNCOMPUTABLE, TP_EVICT_PINNED, TP_OFFLOAD_PINNED, TP_KIND_*.
 *
 * Return: the tensor or NULL with errno (EINVAL, ENOMEM).
 */
TP_API struct tp_tensor *tp_tensor_create(struct tp_ctx *ctx, size_t bytes,
					  unsigned flags);

/**
 * tp_tensor_acquire() - make the whole tensor resident and pin it.
 * @mode: TP_READ, TP_WRITE or both. Pages that hold data are brought back
 *        whatever the mode, so a partial write never loses the rest of a
 *        page; pages never written are backed by fresh chunks.
 *
 * Waits on an in-flight reload, reloads offloaded pages or regenerates
 * evicted ones, making room through the policy. The compute stream is
 * ordered after every copy the data depends on and after the work its
 * memory's previous owner left queued; the host is not blocked by that
 * ordering on a GPU backend, so work on the memory belongs on that stream.
 *
 * Return: the tensor's stable device address, or NULL with errno (ENOMEM
 * when nothing can leave to make room; the tensor is unchanged).
 * Acquisitions nest; each needs a tp_tensor_release().
 */
TP_API void *tp_tensor_acquire(struct tp_ctx *ctx, struct tp_tensor *t,
			       unsigned mode);

/**
 * tp_tensor_acquire_range() - tp_tensor_acquire() on bytes [@off, @off+@len).
 *
 * Only the pages covering the range are made resident and pinned; others
 * keep their state. Return: the address of byte @off, or NULL with errno.
 * Release with tp_tensor_release_range() on the same range.
 */
TP_API void *tp_tensor_acquire_range(struct tp_ctx *ctx, struct tp_tensor *t,
				     size_t off, size_t len, unsigned mode);

/** tp_tensor_release() - unpin what tp_tensor_acquire() pinned. */
TP_API int tp_tensor_release(struct tp_ctx *ctx, struct tp_tensor *t);

/** tp_tensor_release_range() - unpin what tp_tensor_acquire_range() pinned. */
TP_API int tp_tensor_release_range(struct tp_ctx *ctx, struct tp_tensor *t,
				   size_t off, size_t len);

/**
 * tp_tensor_write() - copy @len bytes from host memory @src into the tensor.
 * tp_tensor_read() - copy @len bytes of the tensor into host memory @dst.
 *
 * Both make the pages touched resident as acquire does and return when the
 * copy has completed. Return: 0, -EINVAL for a range outside the tensor,
 * -ENOMEM, -EIO, or -ENOTSUP on the sim backend (which holds no data).
 */
TP_API int tp_tensor_write(struct tp_ctx *ctx, struct tp_tensor *t, size_t off,
			   const void *src, size_t len);
TP_API int tp_tensor_read(struct tp_ctx *ctx, struct tp_tensor *t, size_t off,
			  void *dst, size_t len);

/**
 * tp_tensor_offload() - copy the tensor's resident pages to host swap
 * asynchronously; each chunk returns to the pool when its copy completes.
 *
 * Return: 0; -EBUSY if pinned; -ENOSPC when host swap is full (the tensor
 * stays resident); -EPERM for TP_OFFLOAD_PINNED or TP_NO_PAGING.
 */
TP_API int tp_tensor_offload(struct tp_ctx *ctx, struct tp_tensor *t);

/**
 * tp_tensor_evict() - drop the tensor's resident pages; lineage regenerates
 * them on the next acquire.
 *
 * Return: 0; -EPERM if it cannot be regenerated (uncomputable,
 * TP_EVICT_PINNED); -EBUSY if pinned.
 */
TP_API int tp_tensor_evict(struct tp_ctx *ctx, struct tp_tensor *t);

/**
 * tp_tensor_prefetch() - start bringing the tensor back; returns at once.
 * A later acquire waits on the copy already in flight instead of issuing it
 * again. Return: 0, or -ENOMEM when no free chunk can take it (nothing is
 * evicted to make room for a prefetch).
 */
TP_API int tp_tensor_prefetch(struct tp_ctx *ctx, struct tp_tensor *t);

/**
 * tp_tensor_free() - drop the caller's reference. Memory goes back once no
 * copy is still reading it; lineage may keep the record (fake deletion)
 * while a live tensor still needs it to be regenerated.
 * Return: 0, or -EBUSY if still acquired.
 */
TP_API int tp_tensor_free(struct tp_ctx *ctx, struct tp_tensor *t);

/** tp_tensor_size() - the size in bytes given at creation. */
TP_API size_t tp_tensor_size(const struct tp_tensor *t);

/** tp_tensor_flags() - the tensor's flags. */
TP_API unsigned tp_tensor_flags(const struct tp_tensor *t);

/**
 * tp_tensor_lookup() - the live tensor whose range contains @addr, or NULL.
 * Safe from any thread (RCU); the result is only valid while the caller
 * knows the tensor is not being freed.
 */
TP_API struct tp_tensor *tp_tensor_lookup(struct tp_ctx *ctx, const void *addr);

/** tp_sync() - wait until every copy and op issued so far has completed. */
TP_API int tp_sync(struct tp_ctx *ctx);

/* --- Iterations (the prefetcher learns from the last one) -------------- */

TP_API int tp_iteration_begin(struct tp_ctx *ctx);
TP_API int tp_iteration_end(struct tp_ctx *ctx);

/* --- Ops and lineage -------------------------------------------------- */

struct tp_op_launch;

/*
 * The work of one run of an op, for models of a device's speed (the sim
 * backend's measured profiles, vmm.sim.profile): floating-point
 * operations, bytes read and written, and the largest tensor's bytes
 * (0: not said), by which a profile prices an algorithm's scratch.
 */
struct tp_op_work {
	double flops;
	double bytes;
	double largest;		/* the largest tensor read or written */
};

/*
 * How a splittable op may run in parts: the tensors whose bit is set are
 * cut along their outermost dimension of @rows rows (each one's bytes a
 * multiple of @rows), a part computing a run of rows; the others are
 * whole in every part.
 */
struct tp_op_split {
	size_t rows;
	uint64_t in;		/* bit k: input k is cut (k < 64) */
	uint64_t out;		/* bit k: output k is cut */
	/*
	 * Optional, 0 by default. @sums: where the parts above do not fit,
	 * they may instead read only their own rows of the cut inputs, as
	 * in every run of a TP_OP_SPLIT_LOCAL type, and sum into the whole
	 * outputs, each part adding its rows' share in row order; @passes:
	 * the times such parts go over the rows, each pass but the last
	 * summing what the next one reads (a mean before a variance);
	 * @granule: such parts begin at multiples of this many rows. See
	 * tp_op_run(3), Split.
	 */
	int sums;
	unsigned passes;	/* 0: 1 */
	size_t granule;		/* 0: 1 */
};

/*
 * An op type: registered once, referenced by every record of a run.
 * @launch runs the op. On a GPU backend it enqueues on l->stream and
 * returns; on the host backend it computes on the caller's thread; on sim
 * it is not called (there is no data). It must be deterministic: a
 * recompute replays it and must produce the same bits. An in-place op
 * reads in[inplace_in] and writes out[inplace_out]: the same address on
 * its first run, two different ones when it is replayed.
 */
struct tp_op_type {
	const char *name;
	int (*launch)(const struct tp_op_launch *l);
	/* Cost the sim backend charges (and the policy's prior before the
	 * first measurement), in ns; NULL means 1 µs. */
	uint64_t (*cost_ns)(const void *params, size_t params_len,
			    const size_t *in_bytes, unsigned n_in);
	unsigned flags;
	/* With TP_OP_INPLACE: output inplace_out takes input inplace_in's pages. */
	int inplace_out;
	int inplace_in;
	/*
	 * With TP_OP_SPLITTABLE: which tensors of a run with these params
	 * and tensor sizes are cut along their outermost dimension (struct
	 * tp_op_split); nonzero when this run cannot be cut. See
	 * tp_op_run(3), Split.
	 */
	int (*split)(const void *params, size_t params_len,
		     const size_t *in_bytes, unsigned n_in,
		     const size_t *out_bytes, unsigned n_out,
		     struct tp_op_split *s);
	/*
	 * Optional: the work of a run with these params and input sizes
	 * (struct tp_op_work). Where the backend models its device (the
	 * sim's measured profiles), it prices the op from this instead of
	 * @cost_ns. Nonzero when the params describe no run.
	 */
	int (*work)(const void *params, size_t params_len,
		    const size_t *in_bytes, unsigned n_in,
		    struct tp_op_work *w);
};

#define TP_OP_INPLACE		(1u << 0)
#define TP_OP_SPLITTABLE	(1u << 1)
#define TP_OP_NONDETERMINISTIC	(1u << 2)	/* never recomputed */
/*
 * With TP_OP_SPLITTABLE: a part reads only its own rows of the cut inputs
 * (the op has no output it does not cut). See tp_op_run(3), Split.
 */
#define TP_OP_SPLIT_LOCAL	(1u << 3)
/*
 * With a split that sums in passes: the last pass only reads the whole
 * outputs the passes before it made (a batch's statistics), so rows of
 * the cut outputs can be made again alone, from the run's own whole
 * outputs. See tp_op_run(3), Split.
 */
#define TP_OP_SPLIT_LAST_READS	(1u << 4)
/*
 * The launch enqueues kernels alone on the device (its own, a library's
 * GEMM or convolution forward): no copy, memset or other call whose
 * addresses the driver checks when it is enqueued. Such an op, not in
 * place, may be issued before the library's driver thread has mapped its
 * memory: the stream waits for the maps on the device (vmm.map_gate in
 * tpager.conf(5)). See tp_op_run(3).
 */
#define TP_OP_KERNELS_ONLY	(1u << 5)

/* Where the data of a context's tensors lives (struct tp_op_launch). */
enum tp_device {
	TP_DEVICE_CPU = 0,	/* host memory: the host backend */
	TP_DEVICE_CUDA,		/* GPU memory: the cuda backend */
	TP_DEVICE_NONE,		/* no data: the sim backend */
};

/* The math of an op's floating-point products (vmm.math). */
enum tp_op_math {
	TP_MATH_FP32 = 0,	/* IEEE FP32, fused multiply-add */
	TP_MATH_TF32,		/* inputs rounded to TF32 on tensor cores */
};

/* What a launch function receives. Addresses are device addresses. */
struct tp_op_launch {
	struct tp_ctx *ctx;
	const struct tp_op_type *type;
	const void *params;
	size_t params_len;
	void *const *in;
	const size_t *in_bytes;
	unsigned n_in;
	void *const *out;
	const size_t *out_bytes;
	unsigned n_out;
	void *stream;		/* CUstream on cuda; NULL on host and sim */
	int recompute;		/* 1 when replayed by lineage */
	/*
	 * A split run: part @part of @parts, computing rows [row0, row0 +
	 * rows) of the cut tensors, whose in[] / out[] point at row @row0
	 * and whose in_bytes / out_bytes are those rows' bytes. Unless the
	 * op type is TP_OP_SPLIT_LOCAL, the rows of a cut input after them
	 * are resident too and may be read, so part 0 sees every row: it
	 * writes the whole outputs (not cut), which later parts leave as
	 * they are. A whole run is part 0 of 1 with row0 0 and rows 0.
	 */
	unsigned part, parts;
	size_t row0, rows;
	/* Where in[] and out[] are: the implementation to run. */
	enum tp_device device;
	/*
	 * The most scratch the op's algorithm may take (vmm.workspace_max,
	 * bytes; 0: any). The algorithm must be the same at every launch
	 * of the same params and bound: a recompute's bits are the first
	 * run's.
	 */
	size_t workspace_max;
	/*
	 * The math the op's products may use (vmm.math); an
	 * implementation without TF32 runs FP32. Fixed for a context, so a
	 * recompute's bits are the first run's.
	 */
	enum tp_op_math math;
	/*
	 * A part that sums (struct tp_op_split, sums): pass @pass of
	 * @passes over the rows. Part 0 of a pass starts the whole outputs
	 * it sums into, and every part adds its rows' share. A whole run
	 * makes every pass over every row at once. (Last: the fields above
	 * keep their offsets for op libraries built before them.)
	 */
	int sums;
	unsigned pass, passes;
};

/**
 * tp_op_run() - run an op through the pager and record its lineage.
 * @inputs: existing tensors, acquired for reading (regenerated or reloaded
 *          as needed).
 * @outputs: filled with new computable tensors of @out_bytes each (or, for
 *           an in-place op, the input whose pages the output took).
 *
 * In place (TP_OP_INPLACE) on a computable input, the output is a new
 * tensor at the input's address, with its pages; the input's handle keeps
 * the old version, moved to another address and regenerated when used.
 * On an uncomputable input (a parameter) the output is the input itself,
 * updated at its address; tensors made from its old contents become
 * uncomputable (regenerated first if they were evicted). The launch then
 * writes the only copy: it must fail, if at all, before writing.
 *
 * Return: 0 or -errno; on failure no output exists and inputs are as before.
 */
TP_API int tp_op_run(struct tp_ctx *ctx, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *inputs, unsigned n_in,
		     struct tp_tensor **outputs, const size_t *out_bytes,
		     unsigned n_out);

/**
 * tp_op_before_copy() - in an op's launch (TP_OP_KERNELS_ONLY), before it
 * enqueues a copy, a memset or any call whose addresses the driver checks
 * when it is enqueued: wait until the memory the library is still mapping
 * is mapped. Such a launch may have been issued before its memory was
 * mapped, its stream waiting for it on the device, which a kernel may do
 * and a copy may not. Cheap where nothing is left to map.
 *
 * Return: 0, or -errno of a map that failed (the launch must then fail).
 */
TP_API int tp_op_before_copy(const struct tp_op_launch *l);

/* --- Statistics --------------------------------------------------------- */

struct tp_stats {
	/* device memory */
	uint64_t phys_bytes;		/* mapped now, in bytes (freed
					 * tensors' cached ranges too) */
	uint64_t phys_peak;
	uint64_t budget_bytes;
	uint64_t chunk_size;
	uint64_t chunks_mapped;
	uint64_t chunks_peak;
	uint64_t ranges_reserved;
	uint64_t tensors_live;
	/* host swap */
	uint64_t host_bytes;
	uint64_t host_peak;
	uint64_t host_budget;
	/*
	 * actions, counted in tensors: an offload, reload, eviction or
	 * prefetch of a tensor counts once whatever its number of pages;
	 * the bytes moved are in bytes_d2h and bytes_h2d
	 */
	uint64_t offloads;
	uint64_t reloads;		/* prefetches included */
	uint64_t evictions;		/* whole or in part */
	uint64_t recomputes;		/* ops replayed */
	uint64_t recompute_ns;
	uint64_t prefetch_issued;
	uint64_t prefetch_hits;		/* resident when acquired */
	uint64_t prefetch_late;		/* still in flight when acquired */
	uint64_t prefetch_wasted;	/* left again unused */
	uint64_t bytes_d2h;		/* offloads and writebacks */
	uint64_t bytes_h2d;		/* reloads and prefetches */
	uint64_t copy_d2h_ns;		/* time copies were in flight */
	uint64_t copy_h2d_ns;
	uint64_t stall_ns;		/* caller/compute waited on memory */
	uint64_t compute_ns;		/* time of ops run (first runs) */
	/* range cache and driver */
	uint64_t range_cache_hits;
	uint64_t range_cache_misses;
	uint64_t driver_calls;
	uint64_t driver_ns;
	/* policy */
	uint64_t policy_decisions;
	uint64_t policy_ns;
	/* contiguous mode: free bytes in the pool / bytes held, in ppm */
	uint64_t fragmentation_ppm;
	/* the swap cache (pager.swap_cache, policy.writeback) */
	uint64_t host_cached_bytes;	/* of host_bytes, copies of resident
					 * pages */
	uint64_t writebacks;		/* tensors copied to host ahead */
	uint64_t cache_offloads;	/* offloads that copied nothing */
	/* policy.split */
	uint64_t split_runs;		/* ops run in parts: did not fit whole */
	uint64_t split_parts;		/* launches of those parts */
	/* policy.partial_evict */
	uint64_t partial_evictions;	/* of evictions, those that left
					 * part of the tensor resident */
	/* physical handles (vmm.mapping) */
	uint64_t handles;		/* physical handles now */
	uint64_t handle_creates;	/* handles ever created */
	uint64_t recarves;		/* handles released to make room for
					 * one of another size */
	/* of driver_calls and driver_ns, the library's driver thread's */
	uint64_t driver_bg_calls;
	uint64_t driver_bg_ns;
	/* pages that came back from an eviction or an offload with neither
	 * a copy nor a recompute: their memory had not been reused */
	uint64_t rescued_pages;
	/* demands that failed for want of host swap (pager.host_budget) */
	uint64_t swap_full;
	/* policy.plan */
	uint64_t plans;			/* plans made from a recorded iteration */
	uint64_t plan_hits;		/* victims and split runs as planned */
	uint64_t plan_fallbacks;	/* victims the filter and director
					 * chose instead, the plan on */
	uint64_t plan_breaks;		/* iterations it stopped holding in */
	/* most device memory physical handles held at once, bytes: those
	 * in use, free and released behind (vmm.release_behind) */
	uint64_t device_peak;
	/* iterations in which prefetching stopped: more prefetched tensors
	 * left unused than were used (a record that no longer holds) */
	uint64_t prefetch_halted;
	/* runs the driver thread mapped ahead while the thread issuing
	 * the ops went on (vmm.map_ahead), and that thread's waits for
	 * them: work issued before they were made */
	uint64_t maps_ahead;
	uint64_t gate_waits;
	/* pager.move_evicted: evictions that left their range mapped in
	 * the range cache, and tensors backed by such a range (a new
	 * tensor, or one coming back) instead of mapping their own */
	uint64_t ranges_moved;
	uint64_t ranges_adopted;
	/* host memory obtained for swap, bytes: in use, free, and the
	 * pieces prepared ahead (pager.swap_ahead) */
	uint64_t host_held;
	/* ops replayed on a part's rows alone, for a reader in parts
	 * (lineage.regen_rows) */
	uint64_t rows_regenerated;
	/* of gate_waits, those a stream made on the device (vmm.map_gate) */
	uint64_t gate_device;
	/* most device memory tensors held at once, bytes: phys_peak less
	 * the freed tensors' ranges kept mapped (pager.range_cache_freed),
	 * as a framework's allocator counts allocated against reserved */
	uint64_t held_peak;
	/* policy.tune: the pairs it timed (or ended early) so far; 1 while
	 * it times them (or before an iteration ended), 0 once it kept one,
	 * an iteration paged nothing, or it does not tune; the filter
	 * and the director in force, as the index of their value in the
	 * list of policy.filter's and policy.director's */
	uint64_t tune_trials;
	uint64_t tune_pending;
	uint64_t tune_filter;
	uint64_t tune_director;
};

/** tp_stats_get() - a snapshot of the context's counters. */
TP_API int tp_stats_get(struct tp_ctx *ctx, struct tp_stats *st);

/** tp_strerror() - text for a negative (or positive) errno or TP_E* code. */
TP_API const char *tp_strerror(int err);

/** tp_last_error() - the last backend error message kept on the context. */
TP_API const char *tp_last_error(struct tp_ctx *ctx);

/* --- Configuration ------------------------------------------------------ */

/**
 * tp_ctl_get() - the value of configuration or statistics key @key, as text.
 * The text is what a configuration file would say for the same value.
 * Return: 0, -ENOENT for an unknown key, -ENOSPC if @len is too small
 * (@buf then holds ""), -EINVAL for a NULL argument.
 */
TP_API int tp_ctl_get(struct tp_ctx *ctx, const char *key, char *buf,
		      size_t len);

/**
 * tp_ctl_set() - change a run-time key. Return: 0, -ENOENT unknown key,
 * -EINVAL malformed or out of range, -EPERM read-only or start-only key.
 */
TP_API int tp_ctl_set(struct tp_ctx *ctx, const char *key, const char *value);

enum tp_log_level {
	TP_LOG_ERROR,
	TP_LOG_WARN,
	TP_LOG_INFO,
	TP_LOG_DEBUG,
};

typedef void (*tp_log_fn)(enum tp_log_level level, const char *msg,
			  void *priv);

/**
 * tp_set_log() - route the library's messages to @fn (NULL: stderr for
 * errors and warnings). Process-wide, so that tp_ctx_create() failures are
 * reported too.
 */
TP_API void tp_set_log(tp_log_fn fn, void *priv);

#ifdef __cplusplus
}
#endif

#endif /* TPAGER_H */
