/* SPDX-License-Identifier: MIT */
/* Host memory obtained on a thread of its own, one preparation at a time. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vmm/host_prep.h"

struct tp_host_prep {
	struct tp_host_preparer *pr;
	struct tp_host_prep *next;	/* queued after this one */
	size_t len;
	void *p;		/* the thread's result */
	int err;		/* its errno where @p is NULL */
	bool done;		/* under pr->lock */
};

struct tp_host_preparer {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a job queued or done, or stop */
	struct tp_host_prep *head, **tail;	/* not yet started */
	void *(*obtain)(size_t len, void *arg);
	void *arg;
	pthread_t thread;
	bool started, stop;
};

struct tp_host_preparer *tp_host_preparer_new(void *(*obtain)(size_t len,
							      void *arg),
					      void *arg)
{
	struct tp_host_preparer *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	pthread_mutex_init(&pr->lock, NULL);
	pthread_cond_init(&pr->cond, NULL);
	pr->tail = &pr->head;
	pr->obtain = obtain;
	pr->arg = arg;
	return pr;
}

static void *prepare(void *arg)
{
	struct tp_host_preparer *pr = arg;
	struct tp_host_prep *hp;

	pthread_mutex_lock(&pr->lock);
	for (;;) {
		while (!pr->head && !pr->stop)
			pthread_cond_wait(&pr->cond, &pr->lock);
		hp = pr->head;
		if (!hp)
			break;		/* stopped, nothing left */
		pr->head = hp->next;
		if (!pr->head)
			pr->tail = &pr->head;
		pthread_mutex_unlock(&pr->lock);
		hp->p = pr->obtain(hp->len, pr->arg);
		/* EAGAIN is tp_host_prep_finish()'s "not yet". */
		hp->err = hp->p ? 0 : errno == EAGAIN ? ENOMEM : errno;
		pthread_mutex_lock(&pr->lock);
		hp->done = true;
		pthread_cond_broadcast(&pr->cond);
	}
	pthread_mutex_unlock(&pr->lock);
	return NULL;
}

void tp_host_preparer_free(struct tp_host_preparer *pr)
{
	if (!pr)
		return;
	pthread_mutex_lock(&pr->lock);
	pr->stop = true;
	pthread_cond_broadcast(&pr->cond);
	pthread_mutex_unlock(&pr->lock);
	if (pr->started)
		pthread_join(pr->thread, NULL);
	pthread_cond_destroy(&pr->cond);
	pthread_mutex_destroy(&pr->lock);
	free(pr);
}

struct tp_host_prep *tp_host_prep_start(struct tp_host_preparer *pr,
					size_t len)
{
	struct tp_host_prep *hp = calloc(1, sizeof(*hp));
	int ret = 0;

	if (!hp)
		return NULL;
	hp->pr = pr;
	hp->len = len;
	pthread_mutex_lock(&pr->lock);
	if (!pr->started) {
		ret = pthread_create(&pr->thread, NULL, prepare, pr);
		pr->started = !ret;
	}
	if (!ret) {
		*pr->tail = hp;
		pr->tail = &hp->next;
		pthread_cond_broadcast(&pr->cond);
	}
	pthread_mutex_unlock(&pr->lock);
	if (ret) {
		free(hp);
		errno = ret;
		return NULL;
	}
	return hp;
}

void *tp_host_prep_finish(struct tp_host_prep *hp, bool wait, size_t *len)
{
	struct tp_host_preparer *pr = hp->pr;
	void *p;

	pthread_mutex_lock(&pr->lock);
	if (!hp->done && !wait) {
		pthread_mutex_unlock(&pr->lock);
		errno = EAGAIN;
		return NULL;
	}
	while (!hp->done)
		pthread_cond_wait(&pr->cond, &pr->lock);
	pthread_mutex_unlock(&pr->lock);
	p = hp->p;
	*len = hp->len;
	if (!p)
		errno = hp->err;
	free(hp);
	return p;
}
