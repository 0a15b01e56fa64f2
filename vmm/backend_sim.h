/* SPDX-License-Identifier: MIT */
/* What the sim backend charges, for callers that predict its clocks. */
#ifndef TP_VMM_BACKEND_SIM_H
#define TP_VMM_BACKEND_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

/**
 * tp_vmm_sim_copy_ns() - the cost the sim charges a copy of @len bytes:
 * vmm.sim.copy_latency_ns + @len / vmm.sim.bandwidth (GB/s, i.e. bytes
 * per ns), rounded to the nearest ns. @vmm must be on the sim backend.
 */
uint64_t tp_vmm_sim_copy_ns(struct tp_vmm *vmm, size_t len);

#endif /* TP_VMM_BACKEND_SIM_H */
