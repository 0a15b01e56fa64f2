/* SPDX-License-Identifier: MIT */
/*
 * A device that fails while old mappings wait for its work: the driver
 * thread's event queries fail from then on (CUDA's errors are sticky), no
 * unmap can complete, and every wait for one returns the error instead of
 * waiting for ever. On the host backend with ordered reuse (extents), a
 * copy out is held by its gate, the memory it reads is unmapped behind
 * it, and then the events fail; an alarm fails the test where a call
 * does not return.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"
#include "vmm/deferred.h"

#define NR		1	/* one handle of one chunk */
#define BUDGET		64	/* handles of up to 2 chunks */
#define PER_BACKEND	6
#define WATCHDOG_S	30

static void hung(int sig)
{
	static const char msg[] =
		"not ok - a wait did not return: the library hung\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity;
	struct tp_chunk *c[NR], *e[BUDGET];
	struct tp_event *copied;
	unsigned char *buf;
	uintptr_t a;
	int ret;

	buf = tp_vmm_host_alloc(vmm, NR * g);
	copied = tp_vmm_event_create(vmm);
	if (!buf || !copied)
		bail_out("%s: buffers", name);
	ok(vmm->ordered_reuse && vmm->deferred->mode == TP_DEFERRED_THREAD,
	   "%s: extents: old mappings are unmapped by the driver thread", name);
	ret = tp_vmm_reserve(vmm, NR * g, &a);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	ret = ret ?: tp_vmm_map(vmm, a, c, NR);
	tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = ret ?: tp_vmm_copy_d2h(vmm, buf, a, NR * g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, copied, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_unmap_after(vmm, a, c, NR, copied);
	ok(!ret && vmm->stats.deferred_unmaps == 1,
	   "%s: unmapped behind a copy held in flight", name);

	/* The device fails: no query or wait completes again. */
	tp_vmm_host_fail_events(vmm, -EIO);
	alarm(WATCHDOG_S);
	ret = tp_vmm_reap_wait(vmm);
	ok(ret == -EIO, "%s: a wait for the old mapping returns the error (%s)",
	   name, strerror(-ret));
	ret = tp_vmm_reap_wait(vmm);
	ok(ret == -EIO, "%s: and does so again: the error is sticky", name);
	/* All of it, in handles of 2: the held handle of 1 must go. */
	ret = tp_vmm_chunks_take(vmm, e, BUDGET);
	if (vmm->release_behind)
		ok(ret == 0 && vmm->stats.chunks_dying == 1 &&
		   tp_vmm_reap_wait(vmm) == -EIO,
		   "%s: a take that re-carves it behind returns; the release waits, and a wait returns the error",
		   name);
	else
		ok(ret == -EIO,
		   "%s: a take that must re-carve the handle still mapped fails with it (%s)",
		   name, strerror(-ret));
	if (!ret)
		tp_vmm_chunks_put(vmm, e, BUDGET);
	alarm(0);
	ok(vmm->stats.deferred_unmaps == 1 && c[0]->old_maps == 1,
	   "%s: the old mapping is left as it was", name);

	/* The held copy still writes buf here: let it land before freeing. */
	tp_vmm_host_fail_events(vmm, 0);
	tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	tp_vmm_event_sync(vmm, copied);
	tp_vmm_event_put(vmm, copied);
	tp_vmm_host_free(vmm, buf, NR * g);
	tp_vmm_release(vmm, a, NR * g);
}

int main(void)
{
	static const struct vt_case cases[] = {
		/* the re-carve waits for the old mapping */
		{ "host", "vmm.mapping=extents,vmm.release_behind=0" },
		/* it is left to the driver thread */
		{ "host", "vmm.mapping=extents,vmm.release_behind=10" },
		{ NULL, NULL },
	};

	signal(SIGALRM, hung);
	return vt_run_cases(cases, PER_BACKEND, 256 << 10, BUDGET, body);
}
