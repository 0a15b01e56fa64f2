/* SPDX-License-Identifier: MIT */
/*
 * Reaching the memory tp_tensor_acquire() returned, from a test, the way
 * an op does: on the cuda backend the address is device memory, which the
 * host cannot read or write (nor can it under tests/vmm-fake-libcuda.c),
 * so a test copies on the compute stream, after the work the acquire
 * ordered, and waits for the copy. This holds on host and cuda alike.
 */
#ifndef TP_TESTS_DEV_COPY_H
#define TP_TESTS_DEV_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "ctx/ctx.h"
#include "vmm/vmm.h"

/* Store @len bytes of host memory @src at acquired address @dev. */
static inline int dev_store(struct tp_ctx *ctx, void *dev, const void *src,
			    size_t len)
{
	int ret = tp_vmm_copy_h2d(ctx->vmm, (uintptr_t)dev, src, len,
				  TP_STREAM_COMPUTE);

	return ret ? ret : tp_vmm_stream_sync(ctx->vmm, TP_STREAM_COMPUTE);
}

/* Load @len bytes at acquired address @dev into host memory @dst. */
static inline int dev_load(struct tp_ctx *ctx, void *dst, const void *dev,
			   size_t len)
{
	int ret = tp_vmm_copy_d2h(ctx->vmm, dst, (uintptr_t)dev, len,
				  TP_STREAM_COMPUTE);

	return ret ? ret : tp_vmm_stream_sync(ctx->vmm, TP_STREAM_COMPUTE);
}

#endif /* TP_TESTS_DEV_COPY_H */
