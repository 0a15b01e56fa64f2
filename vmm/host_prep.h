/* SPDX-License-Identifier: MIT */
/*
 * Host memory prepared on a thread of its own while the caller goes on,
 * for the backends whose host swap is real memory: cuda's mapped and
 * faulted in (base/hostmem.h), pinned afterwards on the caller's thread;
 * host's allocated and written. One thread per backend, started with its
 * first preparation, takes them one after the other in the order asked:
 * the pager keeps a few pieces in preparation and takes the oldest first,
 * which is then the nearest done (as the sim's profile lays them out).
 */
#ifndef TP_VMM_HOST_PREP_H
#define TP_VMM_HOST_PREP_H

#include <stdbool.h>
#include <stddef.h>

struct tp_host_preparer;
struct tp_host_prep;

/*
 * A preparer obtaining memory by @obtain(@len, @arg) (NULL with errno set
 * on failure), run on its thread. NULL with errno set on failure.
 */
struct tp_host_preparer *tp_host_preparer_new(void *(*obtain)(size_t len,
							      void *arg),
					      void *arg);
/* Stop the thread; every preparation must have been finished. */
void tp_host_preparer_free(struct tp_host_preparer *pr);

/*
 * Queue the preparation of @len bytes. NULL with errno set when it cannot
 * be queued (or the thread cannot be started).
 */
struct tp_host_prep *tp_host_prep_start(struct tp_host_preparer *pr,
					size_t len);
/*
 * The memory once prepared, and @hp is gone; NULL with errno EAGAIN (and
 * @hp kept) when it is not yet and !@wait, or with the mapping's errno
 * (and @hp gone) when it failed, ENOMEM for its EAGAIN. *@len: its
 * length.
 */
void *tp_host_prep_finish(struct tp_host_prep *hp, bool wait, size_t *len);

#endif /* TP_VMM_HOST_PREP_H */
