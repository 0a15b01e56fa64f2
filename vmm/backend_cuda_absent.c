/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend of a build without the CUDA toolkit: it never opens, so
 * vmm.backend = auto falls back to host and vmm.backend = cuda says why.
 */
#include "config.h"

#include <errno.h>

#include "base/log.h"
#include "vmm/vmm.h"

static int cuda_absent_open(struct tp_vmm *vmm, const struct tp_vmm_conf *conf)
{
	tp_log(TP_LOG_INFO, "vmm: cuda: tpager was built without the CUDA toolkit");
	return -ENODEV;
}

const struct tp_vmm_ops tp_vmm_cuda_ops = {
	.name = "cuda",
	.device = TP_DEVICE_CUDA,
	.open = cuda_absent_open,
};
