/* SPDX-License-Identifier: MIT */
/* Test hooks of the host backend. */
#ifndef TP_VMM_BACKEND_HOST_H
#define TP_VMM_BACKEND_HOST_H

#include <stdbool.h>

#include "vmm/vmm.h"

/**
 * tp_vmm_host_gate() - test-only: while @closed, the copy engine of
 * stream @s starts no new copy (one in progress finishes). Lets a test
 * hold a copy in flight for as long as it needs. Closing the vmm opens
 * every gate. Return: 0, -EINVAL when @vmm is not on the host backend or
 * @s is not a copy stream.
 */
int tp_vmm_host_gate(struct tp_vmm *vmm, enum tp_stream s, bool closed);

/**
 * tp_vmm_host_fail_events() - test-only: from now on every event query
 * and wait returns @err (a -errno; 0 ends it), as a driver's do once the
 * device has failed (CUDA's sticky errors). Return: 0, -EINVAL when
 * @vmm is not on the host backend or @err is positive.
 */
int tp_vmm_host_fail_events(struct tp_vmm *vmm, int err);

#endif /* TP_VMM_BACKEND_HOST_H */
