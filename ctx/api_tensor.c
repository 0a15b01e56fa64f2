/* SPDX-License-Identifier: MIT */
/*
 * The public tp_tensor_* calls: argument checks over the pager's API.
 */
#include <errno.h>

#include "config.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "vmm/vmm.h"

static struct tp_pager *pager_of(struct tp_ctx *ctx)
{
	return ctx ? ctx->pager : NULL;
}

TP_API struct tp_tensor *tp_tensor_create(struct tp_ctx *ctx, size_t bytes,
					  unsigned flags)
{
	struct tp_tensor *t;

	if (!pager_of(ctx)) {
		errno = EINVAL;
		return NULL;
	}
	do
		t = tp_pager_tensor_new(ctx->pager, bytes, flags);
	while (!t && tp_ctx_retry(ctx, -errno));
	return t;
}

/*
 * The public modes always keep contents: a caller writing part of an
 * offloaded tensor must not lose the rest. Pages never written have
 * nothing to reload either way.
 */
static int public_mode(unsigned mode, unsigned *out)
{
	if (!(mode & TP_RW) || (mode & ~TP_RW))
		return -EINVAL;
	*out = mode | TP_READ;
	return 0;
}

TP_API void *tp_tensor_acquire_range(struct tp_ctx *ctx, struct tp_tensor *t,
				     size_t off, size_t len, unsigned mode)
{
	void *addr = NULL;
	unsigned m;
	int ret;

	if (!pager_of(ctx) || !t)
		ret = -EINVAL;
	else
		ret = public_mode(mode, &m);
	if (!ret) {
		do
			ret = tp_pager_user_acquire(ctx->pager, t, off, len, m,
						    &addr);
		while (tp_ctx_retry(ctx, ret));
	}
	if (ret) {
		errno = ret < 0 ? -ret : ret;
		return NULL;
	}
	/* Where the user was told it is, it stays (pager.move_evicted). */
	tp_pager_address_given(t);
	return addr;
}

TP_API void *tp_tensor_acquire(struct tp_ctx *ctx, struct tp_tensor *t,
			       unsigned mode)
{
	return tp_tensor_acquire_range(ctx, t, 0, t ? t->bytes : 0, mode);
}

TP_API int tp_tensor_release_range(struct tp_ctx *ctx, struct tp_tensor *t,
				   size_t off, size_t len)
{
	if (!pager_of(ctx) || !t)
		return -EINVAL;
	/* The caller's own work on it is not counted: record afresh. */
	tp_pager_user_work(ctx->pager);
	return tp_pager_release(ctx->pager, t, off, len);
}

TP_API int tp_tensor_release(struct tp_ctx *ctx, struct tp_tensor *t)
{
	return tp_tensor_release_range(ctx, t, 0, t ? t->bytes : 0);
}

/* Copy between host memory and the tensor on the compute stream. */
static int tensor_copy(struct tp_ctx *ctx, struct tp_tensor *t, size_t off,
		       void *host, size_t len, bool write)
{
	struct tp_pager *pg = pager_of(ctx);
	struct tp_vmm *vmm = ctx ? ctx->vmm : NULL;
	void *addr;
	int ret, ret2;

	if (!pg || !t || !host)
		return -EINVAL;
	if (!tp_vmm_has_data(vmm))
		return -ENOTSUP;
	if (!len)
		return off <= t->bytes ? 0 : -EINVAL;
	do
		ret = tp_pager_user_acquire(pg, t, off, len,
					    write ? TP_RW : TP_READ, &addr);
	while (tp_ctx_retry(ctx, ret));
	if (ret)
		return ret;
	if (write)
		ret = tp_vmm_copy_h2d(vmm, (uintptr_t)addr, host, len,
				      TP_STREAM_COMPUTE);
	else
		ret = tp_vmm_copy_d2h(vmm, host, (uintptr_t)addr, len,
				      TP_STREAM_COMPUTE);
	/* The caller's buffer is in use until the copy lands. */
	tp_vmm_wait_why(write ? "tp_tensor_write" : "tp_tensor_read");
	ret2 = tp_vmm_stream_sync(vmm, TP_STREAM_COMPUTE);
	if (!ret)
		ret = ret2;
	tp_pager_release(pg, t, off, len);
	return ret;
}

TP_API int tp_tensor_write(struct tp_ctx *ctx, struct tp_tensor *t, size_t off,
			   const void *src, size_t len)
{
	return tensor_copy(ctx, t, off, (void *)src, len, true);
}

TP_API int tp_tensor_read(struct tp_ctx *ctx, struct tp_tensor *t, size_t off,
			  void *dst, size_t len)
{
	return tensor_copy(ctx, t, off, dst, len, false);
}

TP_API int tp_tensor_offload(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (!pager_of(ctx) || !t || t->dead)
		return -EINVAL;
	return tp_pager_offload(ctx->pager, t);
}

TP_API int tp_tensor_evict(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (!pager_of(ctx) || !t || t->dead)
		return -EINVAL;
	return tp_pager_evict(ctx->pager, t);
}

TP_API int tp_tensor_prefetch(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (!pager_of(ctx) || !t || t->dead)
		return -EINVAL;
	return tp_pager_prefetch(ctx->pager, t);
}

TP_API int tp_tensor_free(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (!pager_of(ctx) || !t)
		return -EINVAL;
	return tp_pager_tensor_free(ctx->pager, t);
}

TP_API size_t tp_tensor_size(const struct tp_tensor *t)
{
	return t ? t->bytes : 0;
}

TP_API unsigned tp_tensor_flags(const struct tp_tensor *t)
{
	return t ? t->flags : 0;
}

TP_API struct tp_tensor *tp_tensor_lookup(struct tp_ctx *ctx, const void *addr)
{
	if (!pager_of(ctx))
		return NULL;
	return tp_lookup(ctx->pager, (uintptr_t)addr);
}
