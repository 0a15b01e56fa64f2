/* SPDX-License-Identifier: MIT */
/*
 * The "h100" sim profile: what an NVIDIA H100 80GB HBM3 (driver
 * 580.159.04, CUDA 13.0) measured on 2026-11-26, in tpager-train's own
 * traces (ResNet-50, batch 128, under 50% and 25% budgets) rather than a
 * micro-benchmark, so the driver's costs are already what a training run
 * pays (no run factor). Map, set access and unmap are the medians of the
 * runs' calls by handle size (2 MiB: 469, 469 and 199 calls; up to
 * 256 MiB); beyond, extrapolated. The traces do not give the size of a
 * handle made or released: those are the H200's measured curve scaled to
 * the H100 runs' medians (22.2 and 41.5 us over the handles a step makes,
 * mostly 2 to 100 MiB). Copies: 56.6 GB/s each way (an offload of 49 MiB
 * in 0.908 ms); device to device not measured (the H200's, scaled by the
 * two memories' bandwidth, 3.35 against 4.8 TB/s). Pinning by
 * bench/pin-bench on the same machine. The busy factors (calls made while
 * copies are queued) are the H200's: not measured here. The op fits come
 * from the GPU-timed ops of the 50% run by scripts/sim-calibrate, scaled
 * to the unconstrained run's compute time (197 ms a step, against 214 ms
 * for the same ops under the budget; the sim does not model that 8%).
 */
#include "config.h"

#include "vmm/sim_profile.h"

#define US(x)	((uint32_t)((x) * 1000 + 0.5))

static const struct tp_sim_handle_cost h100_handle[] = {
	/* bytes         create    map       set_access unmap     release */
	{ 2ull << 20,   US(15.0), US(2.2),  US(39.2),  US(29.8), US(25.0) },
	{ 8ull << 20,   US(15.0), US(2.5),  US(43.0),  US(31.0), US(32.0) },
	{ 32ull << 20,  US(24.0), US(2.8),  US(46.5),  US(35.2), US(47.0) },
	{ 128ull << 20, US(26.0), US(3.4),  US(55.0),  US(38.5), US(134.0) },
	{ 512ull << 20, US(64.0), US(5.0),  US(75.0),  US(45.0), US(389.0) },
	{ 2ull << 30,   US(90.0), US(8.0),  US(95.0),  US(60.0), US(1450.0) },
};

#include "vmm/sim_profile_h100_ops.inc"

const struct tp_sim_profile tp_sim_profile_h100 = {
	.name = "h100",
	.device = "NVIDIA H100 80GB HBM3",
	.device_bytes = 85017493504ull,
	.handle = h100_handle,
	.nr_handle = sizeof(h100_handle) / sizeof(h100_handle[0]),
	.busy_set_access = 52.0 / 19.4,
	.busy_unmap = 62.0 / 13.3,
	.run_factor = { 1.0, 1.0, 1.0, 1.0, 1.0 },
	.reserve_ns = 4000,
	/* bench/pin-bench: 512 MiB faulted in in 60.4 ms, registered in
	 * 9.7 (the h200 profile's figures, from this machine). */
	.fault_bytes_per_ns = 536870912.0 / 60.4e6,
	.register_bytes_per_ns = 536870912.0 / 9.7e6,
	.link_bytes_per_ns = 56.6,
	.copy_latency_ns = 2400,
	.d2d_bytes_per_ns = 2100.0 * 3.35 / 4.8,
	.d2d_latency_ns = 4600,
	.issue_ns = H100_ISSUE_NS,
	.launch_window = 64,
	/* The H100 took the same 1780 MiB workspace at batch 128. */
	.conv_workspace = 1780.0 / 392.0,
	/*
	 * cuDNN's lean algorithms as on the H200 (sim_profile_h200.c: the
	 * same cuDNN and the same Hopper cores; not measured on an H100).
	 */
	.conv_lean_workspace = 1.0 / 64,
	.conv_lean_slowdown = 1.37,
	.ops = h100_ops,
	.nr_ops = sizeof(h100_ops) / sizeof(h100_ops[0]),
	.other = H100_OTHER,
};
