/* SPDX-License-Identifier: MIT */
/* The trace's writer thread (see tracer_writer.h). */
#include <errno.h>
#include <stdlib.h>

#include "tracer/tracer_writer.h"

static void *writer_thread(void *arg)
{
	struct tp_tracer_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct trace_rec *buf = w->full;
		unsigned n = w->nr_full;
		bool failed = w->failed;

		if (!buf) {
			if (w->stop)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		for (unsigned i = 0; i < n && !failed; i++)
			tp_tracer_rec_write(w->f, w->t0, &buf[i]);
		if (!failed)
			failed = fflush(w->f) || ferror(w->f);
		pthread_mutex_lock(&w->lock);
		w->failed = failed;
		w->spare = buf;
		w->full = NULL;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int tp_tracer_writer_start(struct tp_tracer_writer *w, FILE *f, uint64_t t0,
			   unsigned cap)
{
	int ret;

	*w = (struct tp_tracer_writer){ .f = f, .t0 = t0 };
	w->spare = calloc(cap, sizeof(*w->spare));
	if (!w->spare)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	ret = -pthread_create(&w->thread, NULL, writer_thread, w);
	if (ret) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w->spare);
		w->spare = NULL;
	}
	return ret;
}

struct trace_rec *tp_tracer_writer_swap(struct tp_tracer_writer *w,
					struct trace_rec *buf, unsigned n)
{
	struct trace_rec *next;

	pthread_mutex_lock(&w->lock);
	while (w->full)
		pthread_cond_wait(&w->cond, &w->lock);
	next = w->spare;
	w->spare = NULL;
	w->full = buf;
	w->nr_full = n;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return next;
}

bool tp_tracer_writer_failed(struct tp_tracer_writer *w)
{
	bool failed;

	pthread_mutex_lock(&w->lock);
	failed = w->failed;
	pthread_mutex_unlock(&w->lock);
	return failed;
}

void tp_tracer_writer_stop(struct tp_tracer_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->spare);
	w->spare = NULL;
}
