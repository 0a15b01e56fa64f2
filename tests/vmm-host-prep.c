/* SPDX-License-Identifier: MIT */
/*
 * Host memory prepared on a thread of its own (vmm/host_prep.h).
 *
 * Preparations run one after the other in the order asked, on one
 * thread: once the last is done, the earlier ones are too, and each gets
 * memory of its own length, written by the thread. One not done is
 * refused without waiting (EAGAIN) and kept; a failed one gives the
 * obtaining function's errno, ENOMEM for its EAGAIN (which would say "not
 * yet" of a preparation already gone). A preparer that never prepared
 * starts no thread and frees.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "vmm/host_prep.h"

#define NR	6

struct log {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t order[NR + 2];
	unsigned n;
	bool held;		/* the thread waits while set */
};

/* Length @len filled with its low byte; 0 fails with ENOMEM, 1 with
 * EAGAIN. */
static void *obtain(size_t len, void *arg)
{
	struct log *lg = arg;
	void *p;

	pthread_mutex_lock(&lg->lock);
	while (lg->held)
		pthread_cond_wait(&lg->cond, &lg->lock);
	if (lg->n < NR + 2)
		lg->order[lg->n++] = len;
	pthread_mutex_unlock(&lg->lock);
	if (len < 2) {
		errno = len ? EAGAIN : ENOMEM;
		return NULL;
	}
	p = malloc(len);
	if (p)
		memset(p, (int)(len & 0xff), len);
	return p;
}

static bool filled(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (len & 0xff))
			return false;
	return true;
}

/* The errno of a preparation of @len that fails, waited for; 0: none. */
static int failed_errno(struct tp_host_preparer *pr, size_t len)
{
	struct tp_host_prep *hp = tp_host_prep_start(pr, len);
	size_t got;
	void *p;

	if (!hp)
		bail_out("start: %s", strerror(errno));
	errno = 0;
	p = tp_host_prep_finish(hp, true, &got);
	free(p);
	return p ? 0 : errno;
}

int main(void)
{
	struct tp_host_prep *hp[NR], *held;
	struct tp_host_preparer *pr;
	struct log lg = { .lock = PTHREAD_MUTEX_INITIALIZER,
			  .cond = PTHREAD_COND_INITIALIZER };
	unsigned in_order = 0, ready = 0, right = 0;
	size_t len;
	int err;
	void *p;

	plan_tests(8);

	pr = tp_host_preparer_new(obtain, &lg);
	if (!pr)
		bail_out("preparer: %s", strerror(errno));
	for (unsigned i = 0; i < NR; i++) {
		hp[i] = tp_host_prep_start(pr, 1000 + 37 * i);
		if (!hp[i])
			bail_out("start %u: %s", i, strerror(errno));
	}
	p = tp_host_prep_finish(hp[NR - 1], true, &len);
	right += p && len == 1000 + 37 * (NR - 1) && filled(p, len);
	free(p);
	for (unsigned i = 0; i < NR - 1; i++) {
		p = tp_host_prep_finish(hp[i], false, &len);
		ready += p != NULL;
		right += p && len == 1000 + 37 * i && filled(p, len);
		free(p);
	}
	for (unsigned i = 0; i < lg.n && i < NR; i++)
		in_order += lg.order[i] == 1000 + 37 * i;
	ok(ready == NR - 1,
	   "the last of %d done, the %u before it are too", NR, ready);
	ok(in_order == NR && lg.n == NR,
	   "prepared one after the other in the order asked (%u of %d)",
	   in_order, NR);
	ok(right == NR, "each has memory of its length, written (%u of %d)",
	   right, NR);

	/* Held on the thread: not ready, refused and kept, then done. */
	pthread_mutex_lock(&lg.lock);
	lg.held = true;
	pthread_mutex_unlock(&lg.lock);
	held = tp_host_prep_start(pr, 4096);
	if (!held)
		bail_out("start: %s", strerror(errno));
	errno = 0;
	p = tp_host_prep_finish(held, false, &len);
	ok(!p && errno == EAGAIN,
	   "one not done is refused without waiting (%s)", strerror(errno));
	pthread_mutex_lock(&lg.lock);
	lg.held = false;
	pthread_cond_broadcast(&lg.cond);
	pthread_mutex_unlock(&lg.lock);
	p = tp_host_prep_finish(held, true, &len);
	ok(p && len == 4096 && filled(p, len),
	   "and kept: waited for, it gives its memory");
	free(p);

	err = failed_errno(pr, 0);
	ok(err == ENOMEM,
	   "a failed one gives the obtaining function's errno (%s)",
	   strerror(err));
	err = failed_errno(pr, 1);
	ok(err == ENOMEM, "one that failed with EAGAIN says ENOMEM (%s)",
	   strerror(err));
	tp_host_preparer_free(pr);

	pr = tp_host_preparer_new(obtain, &lg);
	tp_host_preparer_free(pr);
	ok(pr != NULL, "a preparer that prepared nothing frees");
	return exit_status();
}
