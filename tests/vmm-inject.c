/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: a sequence that reserves, takes, maps, copies both
 * ways, unmaps after an event and releases is run once to count its
 * backend calls (K), then K more times with call N = 1..K made to fail.
 * Every run must return the injected error, and afterwards nothing may
 * be mapped, reserved, taken or pending (ASan checks that nothing leaked).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_host.h"

#ifndef TP_FAULT_INJECTION
int main(void)
{
	plan_skip_all("built with --disable-fault-injection");
}
#else
#define NR 3
#define CHUNK (64u << 10)
#define INJECTED EIO

/* The sequence, undoing what it did on the first error. */
static int scenario(struct tp_vmm *vmm)
{
	size_t g = vmm->granularity;
	struct tp_chunk *c[NR];
	struct tp_event *ev = NULL;
	void *in = NULL, *out = NULL;
	bool taken = false, mapped = false;
	bool host = strcmp(vmm->ops->name, "host") == 0;
	uintptr_t va;
	int ret, r2;

	ret = tp_vmm_reserve(vmm, NR * g, &va);
	if (ret)
		return ret;
	in = tp_vmm_host_alloc(vmm, NR * g);
	out = tp_vmm_host_alloc(vmm, NR * g);
	if (!in || !out) {
		ret = -errno;
		goto out_free;
	}
	if (tp_vmm_has_data(vmm))
		vt_fill(in, NR * g, 42);
	ev = tp_vmm_event_create(vmm);
	if (!ev) {
		ret = -errno;
		goto out_free;
	}
	ret = tp_vmm_chunks_take(vmm, c, NR);
	if (ret)
		goto out_free;
	taken = true;
	ret = tp_vmm_map(vmm, va, c, NR);
	if (ret)
		goto out_free;
	mapped = true;
	/* Hold the d2h (host) so that the unmap is always deferred. */
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, true);
	ret = tp_vmm_copy_h2d(vmm, va, in, NR * g, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_D2H, ev);
	ret = ret ?: tp_vmm_copy_d2h(vmm, out, va, NR * g, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_D2H);
	/*
	 * A device copy cannot be held: let it finish, so that the number of
	 * calls does not depend on timing (the unmap is then immediate).
	 */
	if (!ret && !host && tp_vmm_has_data(vmm))
		ret = tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
	if (ret)
		goto out_free;
	ret = tp_vmm_unmap_after(vmm, va, c, NR, ev);
	if (ret)
		goto out_free;
	mapped = taken = false;
	if (host)
		tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
	ret = tp_vmm_sync_all(vmm);
	if (ret)
		goto out_free;
	if (tp_vmm_has_data(vmm) && memcmp(in, out, NR * g))
		ret = -EBADMSG;

out_free:
	/* Cleanup must work whatever failed: injection is one-shot. */
	if (ret) {
		if (host)
			tp_vmm_host_gate(vmm, TP_STREAM_D2H, false);
		tp_vmm_sync_all(vmm);
		if (mapped)
			tp_vmm_unmap(vmm, va, c, NR);
		if (taken)
			tp_vmm_chunks_put(vmm, c, NR);
	}
	tp_vmm_event_put(vmm, ev);
	tp_vmm_host_free(vmm, in, NR * g);
	tp_vmm_host_free(vmm, out, NR * g);
	r2 = tp_vmm_release(vmm, va, NR * g);
	/* A caller keeps a range whose release failed, and tries again. */
	if (r2 && tp_vmm_release(vmm, va, NR * g))
		r2 = -ENOTRECOVERABLE;
	return ret ?: r2;
}

static bool clean(struct tp_vmm *vmm)
{
	return vmm->stats.chunks_mapped == 0 &&
	       vmm->stats.ranges_reserved == 0 &&
	       vmm->stats.deferred_unmaps == 0 &&
	       tp_vmm_chunks_pending(vmm) == 0 &&
	       tp_vmm_chunks_free(vmm) == vmm->nr_chunks;
}

static struct tp_vmm *open_one(const char *name)
{
	struct tp_vmm *vmm;
	char why[256];

	vmm = vt_open(name, CHUNK, NULL, why, sizeof(why));
	if (vmm && tp_vmm_pool_create(vmm, NR * vmm->granularity)) {
		tp_vmm_close(vmm);
		vmm = NULL;
	}
	return vmm;
}

int main(void)
{
	static const char *const names[] = { "host", "sim", "cuda" };
	const char *want = getenv("TPAGER_TEST_BACKEND");
	long k[3] = { 0 }, n;
	unsigned planned = 0, b;

	/* Count each backend's calls first, to plan. */
	for (b = 0; b < 3; b++) {
		struct tp_vmm *vmm = open_one(names[b]);

		if (!vmm)
			continue;
		tp_vmm_fail_at(vmm, 1L << 40, INJECTED);
		if (scenario(vmm) == 0)
			k[b] = vmm->calls_counted;
		tp_vmm_close(vmm);
	}
	for (b = 0; b < 3; b++)
		planned += k[b] ? 2 + 2 * (unsigned)k[b] : 1;
	plan_tests(planned);
	vt_seed();

	for (b = 0; b < 3; b++) {
		struct tp_vmm *vmm;
		bool all_err = true, all_clean = true;

		if (!k[b]) {
			if (b == 2 && !(want && strcmp(want, "cuda") == 0))
				skip(1, "cuda does not open here");
			else
				ok(0, "%s: the sequence runs without injection",
				   names[b]);
			continue;
		}
		ok(k[b] > 10, "%s: the sequence makes %ld counted calls",
		   names[b], k[b]);
		for (n = 1; n <= k[b]; n++) {
			int ret;

			vmm = open_one(names[b]);
			if (!vmm)
				bail_out("%s: reopen", names[b]);
			tp_vmm_fail_at(vmm, n, INJECTED);
			ret = scenario(vmm);
			all_err &= ok(ret == -INJECTED,
				      "%s: call %ld of %ld fails: sequence returns %d",
				      names[b], n, k[b], ret);
			all_clean &= ok(clean(vmm),
					"%s: call %ld: nothing mapped, reserved, taken or pending",
					names[b], n);
			tp_vmm_close(vmm);
		}
		/* And the pool still works after all that. */
		vmm = open_one(names[b]);
		ok(vmm && scenario(vmm) == 0 && clean(vmm),
		   "%s: without injection the sequence succeeds and is clean",
		   names[b]);
		tp_vmm_close(vmm);
	}
	return exit_status();
}
#endif /* TP_FAULT_INJECTION */
