// SPDX-License-Identifier: MIT
/*
 * CUDA ops' shared state: whether a device is usable, the lock around
 * library handles, and error reporting. Only the runtime is used, never
 * the driver library directly, so a build with CUDA loads and runs its CPU
 * paths where libcuda.so.1 is absent: cudaGetDeviceCount() then fails and
 * every CUDA op returns -ENODEV.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/ctx.h"
#include "kernels/cuda_util.h"

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int probe_rc;

static void probe(void)
{
	int n = 0;

	probe_rc = cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ?
		   0 : -ENODEV;
}

int tp_kernels_cuda_available(void)
{
	pthread_once(&probe_once, probe);
	return probe_rc;
}

void tp_cuda_lock(void)
{
	pthread_mutex_lock(&cuda_lock);
}

void tp_cuda_unlock(void)
{
	pthread_mutex_unlock(&cuda_lock);
}

int tp_cuda_fail(const struct tp_op_launch *l, const char *what,
		 const char *msg)
{
	tp_ctx_error(l->ctx, -EIO, "%s: %s: %s", l->type->name, what, msg);
	return -EIO;
}

int tp_cuda_check(const struct tp_op_launch *l, cudaError_t e,
		  const char *what)
{
	if (e == cudaSuccess)
		return 0;
	return tp_cuda_fail(l, what, cudaGetErrorString(e));
}

int tp_cuda_same_bytes(const struct tp_op_launch *l, const void *a,
		       const void *b, size_t bytes, bool *same)
{
	char *ha = malloc(bytes), *hb = malloc(bytes);
	int rc = ha && hb ? 0 : -ENOMEM;

	/* The copies' addresses are checked now: the op's memory mapped. */
	if (!rc)
		rc = tp_op_before_copy(l);
	if (!rc)
		rc = tp_cuda_check(l, cudaMemcpyAsync(ha, a, bytes,
				cudaMemcpyDeviceToHost, TP_STREAM(l)),
				"cudaMemcpyAsync");
	if (!rc)
		rc = tp_cuda_check(l, cudaMemcpyAsync(hb, b, bytes,
				cudaMemcpyDeviceToHost, TP_STREAM(l)),
				"cudaMemcpyAsync");
	if (!rc)
		rc = tp_cuda_check(l, cudaStreamSynchronize(TP_STREAM(l)),
				   "cudaStreamSynchronize");
	if (!rc)
		*same = !memcmp(ha, hb, bytes);
	free(ha);
	free(hb);
	return rc;
}
