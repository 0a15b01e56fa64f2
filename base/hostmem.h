/* SPDX-License-Identifier: MIT */
/*
 * Host memory mapped and faulted in ahead of use: anonymous, on
 * transparent huge pages where the kernel gives them, every page written
 * once. What pins it afterwards (cuMemHostRegister) then finds it there,
 * and the faulting costs no driver call.
 */
#ifndef TP_BASE_HOSTMEM_H
#define TP_BASE_HOSTMEM_H

#include <stddef.h>

/*
 * @len bytes (a multiple of the page size), or NULL with errno set,
 * faulted in by @threads threads at most, and no more than the CPUs
 * online, the caller one of them: the kernel zeroes each page on the
 * thread that faults it, and threads faulting slices of their own go
 * nearly as many times as fast (on a 2-core VM, 256 MiB: one thread
 * 10.1 GB/s, two 21.6). A thread that cannot be started leaves its slice
 * to the caller.
 */
void *tp_hostmem_map(size_t len, unsigned threads);
void tp_hostmem_unmap(void *p, size_t len);
/* Write every page of [@p, @p + @len) once, on this thread, the kernel's
 * way (MADV_POPULATE_WRITE) where it can. */
void tp_hostmem_populate(void *p, size_t len);

#endif /* TP_BASE_HOSTMEM_H */
