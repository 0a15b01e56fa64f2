/* SPDX-License-Identifier: MIT */
/*
 * Replaying a trace through the real library on the sim backend: every
 * created tensor, op, free and iteration boundary of a struct tp_trace
 * becomes the tp_* call a training program would have made, under a
 * budget and a policy chosen by configuration keys. What tpager-sim and
 * bench/policy-table run.
 */
#ifndef TP_TRACE_REPLAY_H
#define TP_TRACE_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"

/* What to replay under. Zero means "the default" where it says so. */
struct tp_replay_opts {
	/* pager.budget; 0: no limit (twice the trace's peak, see replay.c) */
	uint64_t budget_bytes;
	uint64_t chunk_size;	/* vmm.chunk_size; 0: tp_replay_chunk() */
	const char *filter;	/* policy.filter; NULL: its default */
	const char *director;	/* policy.director; NULL: its default */
	int prefetch;		/* policy.prefetch: 0, 1; -1: its default */
	double bandwidth;	/* vmm.sim.bandwidth, GB/s; 0: its default */
	/*
	 * Cost of remapping one chunk, ns, split over map, set-access and
	 * unmap in the proportions of the vmm.sim.* defaults and given to
	 * policy.remap_ns too; negative: the keys' defaults.
	 */
	int64_t remap_ns;
	unsigned iterations;	/* times the measured region runs; 0: 1 */
	/*
	 * Times it runs before that, not counted: the prefetcher learns the
	 * iteration from them, the copies' bandwidth is measured.
	 */
	unsigned warmup;
	/*
	 * After those, more warm-up passes while policy.tune times pairs
	 * (stats.tune_pending), at most TP_REPLAY_TUNE_PASSES: the passes
	 * measured then run the pair it kept.
	 */
	bool warmup_tuned;
	/*
	 * Stop as thrashing once recompute time exceeds (limit - 1) times
	 * the compute time of the measured region(s) (DTR's rule with 2.0);
	 * 0: never. With thrash_base_ns (the time of one unconstrained pass
	 * over the region), also once the measured passes' time, whatever
	 * took it (waits for copies, recompute, remaps), exceeds limit times
	 * theirs unconstrained.
	 */
	double thrash_limit;
	uint64_t thrash_base_ns;
	/*
	 * With wall_base_s (the wall time of one unconstrained pass over
	 * the region, on this machine) and wall_limit, stop as thrashing
	 * once the passes, warm-up included, have taken wall_limit times as
	 * many of it: a replay then never runs much past that multiple of
	 * its unconstrained replay's wall time, whatever slows it (the
	 * policy's own decisions included, which no virtual clock sees).
	 * It is checked between ops. 0: never.
	 */
	double wall_limit;
	double wall_base_s;
	/*
	 * Let the host run ahead of the compute stream as an asynchronous
	 * framework does. By default the host waits for each op to finish,
	 * regenerations included (vmm.sim.sync), as DTR's simulator
	 * assumes: its clock, which staleness is measured on, is compute
	 * time, and memory freed after an op is then free
	 * for the next one, not held by unmaps deferred until the stream
	 * catches up (which, with nothing to make the host wait, fills any
	 * budget). Copies stay asynchronous either way.
	 */
	bool async;
	const char *extra;	/* more "key=value,..." options, or NULL */
};

enum tp_replay_status {
	TP_REPLAY_OK,		/* replayed to the end within the budget */
	TP_REPLAY_OOM,		/* an op found no room: does not fit */
	TP_REPLAY_THRASH,	/* stopped by thrash_limit */
	TP_REPLAY_ERROR,	/* anything else (see error) */
};

/* Counters of the measured region(s), all repetitions together. */
struct tp_replay_result {
	enum tp_replay_status status;
	bool by_wall;		/* THRASH by the wall-time bound */
	int err;		/* the failing call's -errno, or 0 */
	char error[256];	/* what failed, for the user */
	uint64_t budget_bytes;	/* as the pager took it */
	bool limited;		/* false: no budget asked for, the pool
				 * sized so that the replay always fits */
	char policy[64];	/* "filter/director" as the context ran them */
	/* the pair in force at the end (policy.tune may keep another than
	 * the keys'), and the warm-up passes run */
	char in_force[64];
	unsigned warmup;
	uint64_t chunk_size;
	uint64_t phys_peak;	/* mapped bytes, whole replay incl. warm-up */
	/* of those, held by tensors: the freed tensors' ranges kept mapped
	 * for reuse not counted, as DTR's byte count does not */
	uint64_t held_peak;
	/* host swap, whole replay: the most in use, and the memory held
	 * for it at the end (stats.host_peak, stats.host_held) */
	uint64_t host_peak, host_held;
	uint64_t ops;		/* trace ops replayed in the region */
	uint64_t op_runs;	/* tp_op_run calls they took */
	uint64_t compute_ns;	/* recorded cost of those ops */
	uint64_t time_ns;	/* virtual time the region took */
	uint64_t evictions, offloads, reloads, recomputes, recompute_ns;
	uint64_t partial_evictions;	/* of evictions (policy.partial_evict) */
	uint64_t split_runs, split_parts;	/* ops run in parts (policy.split) */
	uint64_t prefetch_hits, stall_ns, copy_ns;
	/* prefetches started, and those still in flight when acquired */
	uint64_t prefetch_issued, prefetch_late;
	uint64_t policy_decisions, policy_ns;
	/* the driver's map, set-access and unmap calls (sim: their charge) */
	uint64_t driver_calls, driver_ns;
	uint64_t writebacks, cache_offloads;	/* the swap cache */
	/* policy.plan: plans made, victims and split runs as planned,
	 * choices left to the filter, iterations the plan broke in */
	uint64_t plans, plan_hits, plan_fallbacks, plan_breaks;
	/* vmm.mode = contiguous: fragmentation rate of the whole replay
	 * (tp_stats.fragmentation_ppm); 0 on chunks */
	uint64_t fragmentation_ppm;
	double wall_s;		/* real time of the region's replay */
};

/*
 * tp_replay_chunk() - the chunk size @o replays @t with: @o->chunk_size,
 * else 64 KiB for a byte-accounted trace (DTR's logs), else 1 MiB.
 */
uint64_t tp_replay_chunk(const struct tp_trace *t,
			 const struct tp_replay_opts *o);

/**
 * tp_replay_run() - replay @t through a new sim context.
 * @t:   the trace (not modified)
 * @o:   budget, policy and costs
 * @r:   filled with the outcome and the counters
 *
 * Tensors created from outside are uncomputable (TP_UNCOMPUTABLE, with
 * their role as TP_KIND_*) and written once when created; ops run through
 * tp_op_run() with their recorded cost; a view shares its base's tensor;
 * an in-place output is a TP_OP_INPLACE op; a storage is freed when its
 * last live tensor is. The measured region (MEASURE_BEGIN to MEASURE_END,
 * else the whole trace) runs @o->iterations times, later times with fresh
 * tensors for what the region creates and for the tensors from before it
 * that it frees (a new batch), as a training loop does.
 *
 * Return: 0 when the replay ran to a verdict (@r->status: fits, OOM or
 * thrash); -EINVAL bad options (@r->error says which); -ENOMEM; another
 * -errno when the library failed otherwise (@r->status is then
 * TP_REPLAY_ERROR and @r->error names the call).
 */
int tp_replay_run(const struct tp_trace *t, const struct tp_replay_opts *o,
		  struct tp_replay_result *r);

/*
 * Thrash limits (struct tp_replay_opts.thrash_limit): DTR's simulator
 * stops a run past an overhead of 2.0; tpager's tools and benches stop
 * a replay of tpager's own traces once recomputing costs nine times the
 * compute, or once the pass has taken ten times as long as unconstrained
 * (thrash_base_ns): such a run would "fit" after hours of virtual time,
 * which no one would call fitting, and waiting for host swap's copies
 * (ResNet-50's trace at 5% of its peak: 102 times its unconstrained
 * time) is no more fitting than recomputing.
 */
#define TP_REPLAY_DTR_THRASH	2.0
#define TP_REPLAY_TRACE_THRASH	10.0

/*
 * The wall-time bound tpager-sim and bench/budget-sweep put on every
 * budgeted replay (struct tp_replay_opts.wall_limit): ten times its
 * unconstrained replay's wall time, after which it ends as thrashing and
 * says so, whatever the virtual clocks say.
 */
#define TP_REPLAY_WALL_LIMIT	10.0

/* Most warm-up passes struct tp_replay_opts.warmup_tuned adds. */
#define TP_REPLAY_TUNE_PASSES	64

/**
 * tp_replay_defaults() - the remap cost, thrash rule and clock of a
 * budgeted replay, by the trace's kind: a DTR log (@dtr) gets DTR's rule
 * and no remapping, as DTR's simulator has none, unless a GPU's sim
 * profile (@profile) charges the driver's costs, which the policy is then
 * told (remap_ns -1: the backend's); tpager's traces get the backend's
 * remap cost and TP_REPLAY_TRACE_THRASH. On a GPU's profile every
 * trace replays asynchronously, the host issuing ahead of the device
 * within the profile's launch window as the training it was recorded
 * from did, tpager's or PyTorch's under DTR (the profile is calibrated
 * so); on the custom profile, which has no launch window, the host waits
 * for each op, DTR's simulator's clock.
 */
void tp_replay_defaults(struct tp_replay_opts *o, bool dtr, bool profile);

/**
 * tp_replay_overhead() - DTR's overhead of @r: (compute + recompute) /
 * compute; 1.0 for an empty region.
 */
double tp_replay_overhead(const struct tp_replay_result *r);

#endif /* TP_TRACE_REPLAY_H */
