/* SPDX-License-Identifier: MIT */
/*
 * The part of an event every backend shares: its reference count. A
 * backend's event embeds struct tp_event as its first member and finds
 * itself again with container_of.
 */
#ifndef TP_VMM_EVENT_H
#define TP_VMM_EVENT_H

#include <stdatomic.h>
#include <stddef.h>

struct tp_event {
	/* Deferred unmaps and library threads hold references too. */
	atomic_uint refs;
	int stream;		/* enum tp_stream last recorded on; -1: none */
};

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#endif /* TP_VMM_EVENT_H */
