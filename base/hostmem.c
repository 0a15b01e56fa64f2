/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <sys/mman.h>

#include "base/hostmem.h"

void *tp_hostmem_map(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);		/* a hint: may be off */
#ifdef MADV_POPULATE_WRITE
	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return p;
#endif
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 0;
	return p;
}

void tp_hostmem_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}
