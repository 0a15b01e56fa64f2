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

/* @len bytes (a multiple of the page size), or NULL with errno set. */
void *tp_hostmem_map(size_t len);
void tp_hostmem_unmap(void *p, size_t len);

#endif /* TP_BASE_HOSTMEM_H */
