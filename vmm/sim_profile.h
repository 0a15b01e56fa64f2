/* SPDX-License-Identifier: MIT */
/*
 * What the sim backend charges, by profile (vmm.sim.profile): "custom"
 * takes the vmm.sim.* keys, "h200" what an NVIDIA H200 measured
 * (sim_profile_h200.c), "h100" what an H100 did (sim_profile_h100.c). A profile prices the driver per handle as a
 * function of the handle's size, copies by their engines' bandwidth, and
 * ops by the work they do.
 */
#ifndef TP_VMM_SIM_PROFILE_H
#define TP_VMM_SIM_PROFILE_H

#include <stddef.h>
#include <stdint.h>

/* What one driver call costs on one handle of @bytes (medians, ns). */
struct tp_sim_handle_cost {
	uint64_t bytes;
	uint32_t create_ns, map_ns, set_access_ns, unmap_ns, release_ns;
};

enum tp_sim_driver_call {
	TP_SIM_CREATE,
	TP_SIM_MAP,
	TP_SIM_SET_ACCESS,
	TP_SIM_UNMAP,
	TP_SIM_RELEASE,
	TP_SIM_NR_CALLS,
};

/*
 * An op's time on the device from its work: @launch_ns + @flops /
 * @flops_per_ns + @bytes / @bytes_per_ns (either rate 0: not charged).
 */
struct tp_sim_op_cost {
	const char *name;		/* the op type's name; NULL: any */
	double launch_ns;
	double flops_per_ns;
	double bytes_per_ns;
};

/* The host's time to issue an op (the launch API, the kernels library and
 * the library's own work at the launch). */
struct tp_sim_issue_cost {
	const char *name;
	uint64_t issue_ns;
};

struct tp_sim_profile {
	const char *name;
	const char *device;		/* what it was measured on */
	uint64_t device_bytes;		/* what 100% means */
	/* Per-handle driver costs at measured sizes, ascending. */
	const struct tp_sim_handle_cost *handle;
	size_t nr_handle;
	/*
	 * How much more set access and unmap cost while copies are queued
	 * on the device (the driver's calls do not wait for them, but slow
	 * down).
	 */
	double busy_set_access, busy_unmap;
	/*
	 * What each call costs in a training run against the
	 * micro-benchmark above (the driver's tables grow with the live
	 * mappings, and the device runs kernels meanwhile), by call.
	 */
	double run_factor[TP_SIM_NR_CALLS];
	uint64_t reserve_ns;		/* one VA reservation or its release */
	/*
	 * Host memory for swap, bytes/ns: mapping and faulting it in (no
	 * driver call: on a thread of its own when prepared ahead), then
	 * pinning it (cuMemHostRegister, on the caller's thread). Obtained
	 * at once, the caller pays both.
	 */
	double fault_bytes_per_ns, register_bytes_per_ns;
	/* Host <-> device copies (each way) and device <-> device. */
	double link_bytes_per_ns;
	/*
	 * Each way's rate while the other way copies too (0: the link is
	 * full duplex at link_bytes_per_ns): host to device and back share
	 * more than the wire on a real machine.
	 */
	double link_duplex_d2h, link_duplex_h2d;
	uint64_t copy_latency_ns;
	double d2d_bytes_per_ns;
	uint64_t d2d_latency_ns;
	/* Host time to issue an op: by name, else @issue_ns. */
	uint64_t issue_ns;
	const struct tp_sim_issue_cost *issue;
	size_t nr_issue;
	/*
	 * Launches on the compute stream the host may have in flight: the
	 * cuda backend times each with a pair of events and, past this many
	 * pairs pending, waits for the oldest (lineage/op_timing.c), so
	 * the host runs at most this far ahead of the device. 0: no bound.
	 */
	unsigned launch_window;
	/*
	 * The scratch a convolution's fastest algorithms take, per byte of
	 * its largest tensor (0: none); that of the leanest, and how many
	 * times as long the convolution takes with it. Under a
	 * vmm.workspace_max between the two, an algorithm taking the bound
	 * runs in between, on a log scale of the scratch.
	 */
	double conv_workspace;
	double conv_lean_workspace;
	double conv_lean_slowdown;
	/* Ops by name, then the model for any other. */
	const struct tp_sim_op_cost *ops;
	size_t nr_ops;
	struct tp_sim_op_cost other;
};

extern const struct tp_sim_profile tp_sim_profile_h200;
extern const struct tp_sim_profile tp_sim_profile_h100;

/**
 * tp_sim_handle_ns() - what @call costs on one handle of @bytes:
 * interpolated log-log between the measured sizes around it, and
 * extrapolated along the nearest segment beyond them.
 */
uint64_t tp_sim_handle_ns(const struct tp_sim_profile *p,
			  enum tp_sim_driver_call call, uint64_t bytes);

/**
 * tp_sim_op_ns() - the device time of op @name doing @flops and moving
 * @bytes, by the profile's fit for it (or the one for any op).
 */
uint64_t tp_sim_op_ns(const struct tp_sim_profile *p, const char *name,
		      double flops, double bytes);

/**
 * tp_sim_issue_ns() - the host's time to issue op @name (NULL: work of no
 * op's), by the profile's table, else its time for any op.
 */
uint64_t tp_sim_issue_ns(const struct tp_sim_profile *p, const char *name);

#endif /* TP_VMM_SIM_PROFILE_H */
