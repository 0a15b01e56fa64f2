/* SPDX-License-Identifier: MIT */
/*
 * The "h200" sim profile: what an NVIDIA H200 (driver 580.159.04, CUDA
 * 13.0) measured on 2026-11-26. The driver's costs are medians of nine
 * create/map/set_access/unmap/release cycles of one handle per size; the
 * copies were pinned host <-> device at 55 GB/s each way (2 MiB in
 * 40.5 us; the job's own rates below) and device <-> device at 2.1 TB/s
 * (2 MiB in 5.6 us). With
 * 10 ms of copies queued on a stream, an unmap took 62 us (13.3 idle)
 * and a set access 52 us (19.4 idle), on 2 MiB handles. The op
 * fits come from the GPU-timed ops of tpager-train's ResNet-50 (batch
 * 128) on that machine, by scripts/sim-calibrate; the host's time to
 * issue them from a later trace of batch 102 (scripts/calib/), by
 * scripts/sim-issue-calibrate.
 */
#include "config.h"

#include "vmm/sim_profile.h"

#define US(x)	((uint32_t)((x) * 1000 + 0.5))

static const struct tp_sim_handle_cost h200_handle[] = {
	/* bytes         create    map       set_access unmap     release */
	{ 2ull << 20,   US(7.0),  US(0.7),  US(19.4),  US(13.3), US(8.9) },
	{ 8ull << 20,   US(6.9),  US(0.6),  US(18.8),  US(13.2), US(11.6) },
	{ 32ull << 20,  US(12.8), US(0.6),  US(32.5),  US(20.4), US(16.8) },
	{ 128ull << 20, US(8.2),  US(0.7),  US(34.0),  US(21.5), US(47.8) },
	{ 512ull << 20, US(32.1), US(0.6),  US(44.7),  US(24.2), US(138.8) },
	{ 2ull << 30,   US(22.2), US(0.8),  US(82.7),  US(37.6), US(517.8) },
};

#include "vmm/sim_profile_h200_ops.inc"
#include "vmm/sim_profile_h200_issue.inc"

const struct tp_sim_profile tp_sim_profile_h200 = {
	.name = "h200",
	.device = "NVIDIA H200",
	.device_bytes = 143771ull << 20,
	.handle = h200_handle,
	.nr_handle = sizeof(h200_handle) / sizeof(h200_handle[0]),
	.busy_set_access = 52.0 / 19.4,
	.busy_unmap = 62.0 / 13.3,
	/*
	 * In the budgeted ResNet-50's trace, while the device idled and the
	 * host mapped the next activation (2 MiB handles), a 98 MiB tensor
	 * took 1.4 ms and a 392 MiB one 5.3 ms: 27-28.6 us a handle against
	 * 20.8 + 0.7 in the micro-benchmark's run of 64 (1.3 times). The
	 * driver thread of a later H200 run (2026-11-27, ResNet-50 at batch
	 * 128 in 4 GiB, the steps after the second) paid more again, per
	 * call against this profile at 1.3: create 35.3 us (2.82 times),
	 * map 5.9 (4.14), set access 93.7 (1.20), unmap 57.3 (1.03),
	 * release 49.2 (1.85), with its handles' sizes; so, by call:
	 */
	.run_factor = {
		[TP_SIM_CREATE] = 1.3 * 2.82,
		[TP_SIM_MAP] = 1.3 * 4.14,
		[TP_SIM_SET_ACCESS] = 1.3 * 1.20,
		[TP_SIM_UNMAP] = 1.3 * 1.03,
		[TP_SIM_RELEASE] = 1.3 * 1.85,
	},
	/* not measured: cuMemAddressReserve costs about a map */
	.reserve_ns = 2000,
	/*
	 * Host swap as the cuda backend pins it now: mapped on huge pages,
	 * faulted in, then registered. bench/pin-bench measured 512 MiB in
	 * 60.4 + 9.7 ms on an H100 machine (a host-side cost: the same
	 * driver, CUDA 13.0): 7.65 GB/s. The H200's cuMemHostAlloc, which
	 * the backend used before, came to about 4 GB/s (the first timed
	 * step of its budgeted run pinned 1780 MiB of swap and took 690 ms
	 * more than the next, 450 ms of it not in the sim). Faulting in is
	 * 60.4 ms of the 70.1: 8.89 GB/s, registering 55.3.
	 */
	.fault_bytes_per_ns = 536870912.0 / 60.4e6,
	.register_bytes_per_ns = 536870912.0 / 9.7e6,
	/*
	 * The link as the main job uses it (2026-11-27: ResNet-50 at batch
	 * 600 in 4 GiB, the GPU's own trace, copies of 100 MB or more):
	 * out 51.3 GB/s and in 49.3 with the other way idle; while the
	 * other way copied, out 48.3 and in 34.1. The micro-benchmark's 55
	 * (2 MiB, nothing beside) left the sim's step 12-28% short at
	 * batches 400-650; with these, 6-9% with the swap cache and 17-24%
	 * without it, where the GPU also copied more (its policy timed its
	 * own ops).
	 */
	.link_bytes_per_ns = 50.3,
	.link_duplex_d2h = 48.3,
	.link_duplex_h2d = 34.1,
	.copy_latency_ns = 2400,
	.d2d_bytes_per_ns = 2100.0,
	.d2d_latency_ns = 4600,
	.issue_ns = H200_ISSUE_NS,
	/*
	 * The issuing thread's own time in each op's launch, less its
	 * waits, from a trace of ResNet-50 at batch 102 in 4 GiB on that
	 * machine (2026-11-27; scripts/sim-issue-calibrate): a backward
	 * convolution's two cuDNN calls and their descriptors kept it
	 * 0.83 ms on average, a forward one 0.41 ms.
	 */
	.issue = h200_issue,
	.nr_issue = sizeof(h200_issue) / sizeof(h200_issue[0]),
	.launch_window = 64,
	/*
	 * tpager-train's ResNet-50 (batch 128) took a 1780 MiB workspace for
	 * the convolutions cuDNN chose, whose largest tensors are 392 MiB
	 * (128 x 64 x 112 x 112 and 128 x 256 x 56 x 56 floats). One point:
	 * the workspace is priced in proportion.
	 */
	.conv_workspace = 1780.0 / 392.0,
	/*
	 * cuDNN's implicit-GEMM algorithms take scratch for their
	 * precomputed indices only (1/64 of the largest tensor, assumed),
	 * and a bound between that and the fastest's scratch gets an
	 * algorithm in between (backend_sim.c: on a log scale). The leanest's
	 * time is fitted to the H200's (bench/conv-lean, ResNet-50 at batch
	 * 128): the step took 1.027 times the unbounded one under 256 MiB
	 * and 1.114 under 64 MiB (0.98 under 1 GiB); 1.37 gives 1.046 and
	 * 1.106 (1.008).
	 */
	.conv_lean_workspace = 1.0 / 64,
	.conv_lean_slowdown = 1.37,
	.ops = h200_ops,
	.nr_ops = sizeof(h200_ops) / sizeof(h200_ops[0]),
	.other = H200_OTHER,
};
