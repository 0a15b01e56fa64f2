/* SPDX-License-Identifier: MIT */
/*
 * Events are waited on from other threads, as the pager's completion and
 * prefetch threads do: a second thread syncs each event the caller records
 * after a round trip h2d -> d2h and then finds the bytes home, while the
 * caller keeps enqueueing; the waiting thread holds its own reference to
 * each event and drops it when done.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"

#define ROUNDS 64
#define PER_BACKEND 4

struct shared {
	struct tp_vmm *vmm;
	size_t len;
	unsigned char *src[ROUNDS], *dst[ROUNDS];
	struct tp_event *ev[ROUNDS];
	atomic_int published;
	int good, synced;
};

static void *waiter(void *arg)
{
	struct shared *sh = arg;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		while (atomic_load(&sh->published) <= i)
			sched_yield();
		if (tp_vmm_event_sync(sh->vmm, sh->ev[i]) == 0 &&
		    tp_vmm_event_query(sh->vmm, sh->ev[i]) == 0)
			sh->synced++;
		if (memcmp(sh->dst[i], sh->src[i], sh->len) == 0)
			sh->good++;
		tp_vmm_event_put(sh->vmm, sh->ev[i]);
	}
	return NULL;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	struct shared sh = { .vmm = vmm, .len = vmm->granularity };
	struct tp_chunk *c[2];
	pthread_t thr;
	uintptr_t va;
	int i, ret, started;

	ret = tp_vmm_reserve(vmm, 2 * sh.len, &va);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, 2);
	ret = ret ?: tp_vmm_map(vmm, va, c, 2);
	for (i = 0; i < ROUNDS && !ret; i++) {
		sh.src[i] = tp_vmm_host_alloc(vmm, sh.len);
		sh.dst[i] = tp_vmm_host_alloc(vmm, sh.len);
		sh.ev[i] = tp_vmm_event_create(vmm);
		if (!sh.src[i] || !sh.dst[i] || !sh.ev[i])
			ret = -1;
		else
			vt_fill(sh.src[i], sh.len, vt_seed() + 1000 + i);
	}
	ok_rc(ret, "%s: buffers, events, 2 chunks mapped", name);
	if (ret)
		bail_out("%s: setup", name);

	started = pthread_create(&thr, NULL, waiter, &sh);
	for (i = 0; i < ROUNDS && !ret; i++) {
		/* Alternate pages so consecutive rounds overlap in flight. */
		uintptr_t page = va + (size_t)(i % 2) * sh.len;
		struct tp_event *e = sh.ev[i];

		ret = tp_vmm_copy_h2d(vmm, page, sh.src[i], sh.len, TP_STREAM_H2D);
		ret = ret ?: tp_vmm_event_record(vmm, e, TP_STREAM_H2D);
		ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_D2H, e);
		ret = ret ?: tp_vmm_copy_d2h(vmm, sh.dst[i], page, sh.len,
					      TP_STREAM_D2H);
		ret = ret ?: tp_vmm_event_record(vmm, e, TP_STREAM_D2H);
		/* The next h2d into this page must wait for this d2h. */
		ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_H2D, e);
		/* The waiter's reference; ours is dropped at once. */
		tp_vmm_event_get(e);
		tp_vmm_event_put(vmm, e);
		atomic_store(&sh.published, i + 1);
	}
	ok(!started && !ret, "%s: %d round trips enqueued while a thread waits",
	   name, ROUNDS);
	if (!started)
		pthread_join(thr, NULL);
	ok(sh.synced == ROUNDS, "%s: the thread synced all %d events (%d)",
	   name, ROUNDS, sh.synced);
	ok(sh.good == ROUNDS,
	   "%s: after each sync the bytes were home, exactly (%d of %d)", name,
	   sh.good, ROUNDS);

	tp_vmm_sync_all(vmm);
	tp_vmm_unmap(vmm, va, c, 2);
	tp_vmm_chunks_put(vmm, c, 2);
	tp_vmm_release(vmm, va, 2 * sh.len);
	for (i = 0; i < ROUNDS; i++) {
		tp_vmm_host_free(vmm, sh.src[i], sh.len);
		tp_vmm_host_free(vmm, sh.dst[i], sh.len);
	}
}

int main(void)
{
	static const struct vt_case cases[] = {
		{ "host", NULL },
		{ "host", "vmm.host.copy_threads=2" },
		{ "cuda", NULL },
		{ NULL, NULL },
	};

	return vt_run_cases(cases, PER_BACKEND, 256 << 10, 2, body);
}
