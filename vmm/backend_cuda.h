/* SPDX-License-Identifier: MIT */
/* Test hook of the cuda backend. */
#ifndef TP_VMM_BACKEND_CUDA_H
#define TP_VMM_BACKEND_CUDA_H

/*
 * The driver library the cuda backend opens: "libcuda.so.1". Tests point
 * it at the toolkit's stub library to check that every entry point the
 * backend needs is exported under the name it looks up.
 */
extern const char *tp_vmm_cuda_library;

#endif /* TP_VMM_BACKEND_CUDA_H */
