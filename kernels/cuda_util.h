/* SPDX-License-Identifier: MIT */
/*
 * What the CUDA ops share: the lock around library handles, error
 * reporting, and the launchers of the small .cu kernels that the cuBLAS
 * and cuDNN ops need beside the libraries (bias rows, column sums).
 */
#ifndef TP_KERNELS_CUDA_UTIL_H
#define TP_KERNELS_CUDA_UTIL_H

#include <cuda_runtime_api.h>

#include "kernels/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TP_STREAM(l)	((cudaStream_t)(l)->stream)

/*
 * cuBLAS and cuDNN handles are shared by the process and bound to the
 * launch's stream for the duration of one op, under this lock.
 */
void tp_cuda_lock(void);
void tp_cuda_unlock(void);

/**
 * tp_cuda_fail() - report a failed CUDA call of op @l.
 * @what: the call that failed; @msg: the library's text.
 *
 * Keeps the message as the context's last error and logs it.
 * Return: -EIO.
 */
int tp_cuda_fail(const struct tp_op_launch *l, const char *what,
		 const char *msg);

/** tp_cuda_check() - 0 for cudaSuccess, else tp_cuda_fail(). */
int tp_cuda_check(const struct tp_op_launch *l, cudaError_t e,
		  const char *what);

/**
 * tp_cuda_same_bytes() - *@same: the @bytes at device addresses @a and @b
 * are equal, once the work queued on @l's stream is done (the host waits
 * for it). Return: 0, -ENOMEM or -EIO.
 */
int tp_cuda_same_bytes(const struct tp_op_launch *l, const void *a,
		       const void *b, size_t bytes, bool *same);

/**
 * tp_cuda_sgemm() - @batch row-major products C = alpha op(A) op(B) on
 * cuBLAS, the matrices of each operand @sa, @sb, @sc floats apart.
 * Return: 0 or -EIO.
 */
int tp_cuda_sgemm(const struct tp_op_launch *l, int trans_a, int trans_b,
		  int m, int n, int k, float alpha, const float *a,
		  long long sa, const float *b, long long sb, float *c,
		  long long sc, int batch);

/* Launchers of kernels in cuda_eltwise.cu; they return the launch error. */
cudaError_t tp_cuda_bias_rows(float *y, const float *b, uint32_t rows,
			      uint32_t cols, cudaStream_t s);
cudaError_t tp_cuda_col_sum(const float *x, float *sum, uint32_t rows,
			    uint32_t cols, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* TP_KERNELS_CUDA_UTIL_H */
