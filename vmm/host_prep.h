/* SPDX-License-Identifier: MIT */
/*
 * Host memory prepared on a thread of its own while the caller goes on,
 * for the backends whose host swap is real memory: cuda's mapped and
 * faulted in (base/hostmem.h), pinned afterwards on the caller's thread;
 * host's allocated and written. One preparation, one short-lived thread:
 * host swap grows a few times a run.
 */
#ifndef TP_VMM_HOST_PREP_H
#define TP_VMM_HOST_PREP_H

#include <stdbool.h>
#include <stddef.h>

struct tp_host_prep;

/*
 * Start preparing @len bytes by @obtain(@len, @arg) (NULL with errno set
 * on failure), run on the new thread. NULL with errno set when no thread
 * can be started.
 */
struct tp_host_prep *tp_host_prep_start(size_t len,
					void *(*obtain)(size_t len, void *arg),
					void *arg);
/*
 * The memory once prepared, and @hp is gone; NULL with errno EAGAIN (and
 * @hp kept) when it is not yet and !@wait, or with the mapping's errno
 * (and @hp gone) when it failed. *@len: its length.
 */
void *tp_host_prep_finish(struct tp_host_prep *hp, bool wait, size_t *len);

#endif /* TP_VMM_HOST_PREP_H */
