/* SPDX-License-Identifier: MIT */
/* Host memory obtained on a thread of its own. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vmm/host_prep.h"

struct tp_host_prep {
	pthread_t thread;
	void *(*obtain)(size_t len, void *arg);
	void *arg;
	size_t len;
	void *p;		/* the thread's result */
	int err;		/* its errno where @p is NULL */
	bool done;		/* set by the thread, read with atomics */
};

static void *prepare(void *arg)
{
	struct tp_host_prep *hp = arg;

	hp->p = hp->obtain(hp->len, hp->arg);
	hp->err = hp->p ? 0 : errno;
	__atomic_store_n(&hp->done, true, __ATOMIC_RELEASE);
	return NULL;
}

struct tp_host_prep *tp_host_prep_start(size_t len,
					void *(*obtain)(size_t len, void *arg),
					void *arg)
{
	struct tp_host_prep *hp = calloc(1, sizeof(*hp));
	int ret;

	if (!hp)
		return NULL;
	hp->obtain = obtain;
	hp->arg = arg;
	hp->len = len;
	ret = pthread_create(&hp->thread, NULL, prepare, hp);
	if (ret) {
		free(hp);
		errno = ret;
		return NULL;
	}
	return hp;
}

void *tp_host_prep_finish(struct tp_host_prep *hp, bool wait, size_t *len)
{
	void *p;

	if (!wait && !__atomic_load_n(&hp->done, __ATOMIC_ACQUIRE)) {
		errno = EAGAIN;
		return NULL;
	}
	pthread_join(hp->thread, NULL);
	p = hp->p;
	*len = hp->len;
	if (!p)
		errno = hp->err;
	free(hp);
	return p;
}
