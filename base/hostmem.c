/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hostmem.h"

/* Slices start on huge-page boundaries: no page is faulted by two. */
#define SLICE_ALIGN	(2u << 20)
#define MAX_THREADS	64

struct slice {
	char *p;
	size_t len;
	pthread_t thread;
	bool started;
};

void tp_hostmem_populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return;
#endif
	for (size_t off = 0; off < len; off += 4096)
		((char *)p)[off] = 0;
}

static void *populate_slice(void *arg)
{
	struct slice *s = arg;

	tp_hostmem_populate(s->p, s->len);
	return NULL;
}

void *tp_hostmem_map(size_t len, unsigned threads)
{
	struct slice s[MAX_THREADS];
	size_t each, n;
	long cpus;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);		/* a hint: may be off */
	/* More threads than CPUs only take turns (2 CPUs: 4 threads
	 * fault at 15 GB/s, 2 at 21.6). */
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 0 && threads > (unsigned long)cpus)
		threads = (unsigned)cpus;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (!threads)
		threads = 1;
	/* Whole huge pages a slice, at least one: no more slices than
	 * threads, whatever @len. */
	each = ((len + threads - 1) / threads + SLICE_ALIGN - 1) &
	       ~(size_t)(SLICE_ALIGN - 1);
	if (!each)
		each = SLICE_ALIGN;
	for (n = 0; n * each < len; n++) {
		s[n].p = p + n * each;
		s[n].len = len - n * each < each ? len - n * each : each;
		/* Slice 0 is the caller's. */
		s[n].started = n && !pthread_create(&s[n].thread, NULL,
						    populate_slice, &s[n]);
	}
	for (size_t i = 0; i < n; i++)
		if (!s[i].started)
			tp_hostmem_populate(s[i].p, s[i].len);
	for (size_t i = 1; i < n; i++)
		if (s[i].started)
			pthread_join(s[i].thread, NULL);
	return p;
}

void tp_hostmem_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}
