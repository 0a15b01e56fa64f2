/* SPDX-License-Identifier: MIT */
/*
 * Freeing a tensor whose offload is in flight returns at once: the pager
 * does not wait for the copy and the vmm defers the range's release
 * behind its pending unmaps. The host copy engine's gate holds the copy
 * (a free that waited would never return: an alarm fails the test then).
 * Once the gate opens, the range, chunks and swap buffers all come back.
 */
#include "config.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "tests/pager-util.h"
#include "vmm/backend_host.h"
#include "vmm/vmm.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_alarm(int sig)
{
	static const char msg[] = "Bail out! a free waited for a held copy\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

int main(void)
{
	struct tp_tensor *t, *u;
	struct tp_stats st0, st;
	struct tp_ctx *ctx;
	unsigned char *buf, *got;
	size_t chunk, bytes;
	uint64_t t0, ns;

	if (strcmp(pt_backend(), "host")) {
		plan_skip_all("needs the host backend's copy gate");
		return exit_status();
	}
	pt_probe();
	plan_tests(10);
	ctx = pt_ctx("pager.budget=16C,pager.range_cache=0");
	chunk = pt_chunk(ctx);
	bytes = 4 * chunk;
	buf = malloc(bytes);
	got = malloc(bytes);
	pt_fill(buf, bytes, 7);

	/* A second tensor shows that the rest carries on meanwhile. */
	u = tp_tensor_create(ctx, bytes, 0);
	ok(u && !tp_tensor_write(ctx, u, 0, buf, bytes), "a neighbour written");
	t = tp_tensor_create(ctx, bytes, 0);
	ok(t && !tp_tensor_write(ctx, t, 0, buf, bytes), "tensor written");
	tp_stats_get(ctx, &st0);

	signal(SIGALRM, on_alarm);
	alarm(10);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	ok_rc(tp_tensor_offload(ctx, t), "offload issued behind a closed gate");
	t0 = mono_ns();
	ok_rc(tp_tensor_free(ctx, t), "free with the offload in flight");
	ns = mono_ns() - t0;
	ok(ns < 1000000000ull, "free returned at once (%llu ns)",
	   (unsigned long long)ns);
	tp_stats_get(ctx, &st);
	ok(st.ranges_reserved == st0.ranges_reserved &&
	   ctx->vmm->stats.deferred_releases == 1,
	   "its range waits for the unmaps (%llu reserved, %llu deferred)",
	   (unsigned long long)st.ranges_reserved,
	   (unsigned long long)ctx->vmm->stats.deferred_releases);
	ok(!tp_tensor_read(ctx, u, 0, got, bytes) && !memcmp(got, buf, bytes),
	   "the neighbour reads back meanwhile");

	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, false);
	ok_rc(tp_sync(ctx), "gate opened, sync");
	alarm(0);
	tp_stats_get(ctx, &st);
	ok(st.ranges_reserved == st0.ranges_reserved - 1 &&
	   ctx->vmm->stats.deferred_releases == 0,
	   "the range is released once the copy landed (%llu reserved)",
	   (unsigned long long)st.ranges_reserved);
	ok(st.phys_bytes == bytes && st.host_bytes == 0,
	   "chunks and swap buffers back (%llu device, %llu host bytes)",
	   (unsigned long long)st.phys_bytes,
	   (unsigned long long)st.host_bytes);

	tp_tensor_free(ctx, u);
	tp_ctx_destroy(ctx);
	free(buf);
	free(got);
	return exit_status();
}
