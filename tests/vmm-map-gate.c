/* SPDX-License-Identifier: MIT */
/*
 * Where maps made ahead are waited for (vmm.map_gate): before an op's
 * kernels on the device, the issuing thread going on; before anything
 * else (a copy, a memset, an op in place) on the host.
 *
 * Sim (h200 profile, whose driver thread is played) checks the clocks:
 * with the gate on the device the caller's clock stays where it was and
 * the compute stream's starts the work only once the map landed; on the
 * host the caller's clock moves there; a second gate for the same maps
 * puts no second wait on the stream; vmm.map_gate = host and = ops move
 * the line.
 *
 * cuda (the stand-in driver, whose cuStreamWaitValue32 holds the events
 * recorded after it): with the driver thread's maps held, the gate
 * returns at once (a wait on the host would never end: the alarm fails
 * the test), an event recorded behind it is not complete until the map
 * is made, and then the bytes copied in come back. A map the driver
 * thread fails while the stream waits for it: the spare page stands at
 * its pages, the stream is released (no hang), and every later sync
 * returns the error.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/deferred.h"

#define NR		4
#define POOL		32
#define PER_CASE	6
#define WORK_NS		1000000		/* sim: 1 ms of kernels */

/* The compute stream's clock after @w's gate and 1 ms of work (sim). */
static uint64_t gated_work(struct tp_vmm *vmm, enum tp_vmm_work w,
			   uint64_t *host, int *ret)
{
	struct tp_event *ev = tp_vmm_event_create(vmm);
	uint64_t t = 0;

	if (!ev)
		bail_out("an event");
	*ret = tp_vmm_gate_work(vmm, TP_STREAM_COMPUTE, w);
	*host = tp_vmm_now_ns(vmm);
	*ret = *ret ?: tp_vmm_launch_op(vmm, TP_STREAM_COMPUTE, NULL, w,
					WORK_NS, NULL, NULL);
	*ret = *ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_COMPUTE);
	if (!*ret)
		vmm->ops->event_when(vmm, ev, &t);
	tp_vmm_event_put(vmm, ev);
	return t;
}

/* Map @NR pages at a fresh range ahead; when the played thread made it. */
static uint64_t map_one(struct tp_vmm *vmm, struct tp_chunk **c,
			uintptr_t *va)
{
	int ret = tp_vmm_reserve(vmm, NR * vmm->granularity, va);

	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	ret = ret ?: tp_vmm_map_ahead(vmm, *va, c, NR);
	if (ret)
		bail_out("map ahead: %d", ret);
	return vmm->deferred->ahead.played_at;
}

static void sim_body(struct tp_vmm *vmm, const char *opts)
{
	int gate = vmm->map_gate;
	bool dev_kernels = gate != TP_MAP_GATE_HOST;
	bool dev_ops = gate == TP_MAP_GATE_OPS;
	struct tp_chunk *c[3][NR];
	uint64_t h0, h1, landed, t, dev0;
	uintptr_t va[3];
	int ret;

	/* 1-2: an op's kernels */
	landed = map_one(vmm, c[0], &va[0]);
	h0 = tp_vmm_now_ns(vmm);
	dev0 = vmm->stats.gate_device;
	t = gated_work(vmm, TP_WORK_KERNELS, &h1, &ret);
	ok(!ret && landed > h0 && t >= landed + WORK_NS &&
	   (dev_kernels ? h1 == h0 : h1 >= landed),
	   "sim %s: kernels: the map lands at +%llu ns, the work ends at +%llu, the caller's clock +%llu (%s)",
	   opts, (unsigned long long)(landed - h0),
	   (unsigned long long)(t - h0), (unsigned long long)(h1 - h0),
	   dev_kernels ? "the stream waits" : "the caller waits");
	ok(vmm->stats.gate_device - dev0 == (dev_kernels ? 1u : 0u),
	   "sim %s: %llu waits on the device, one for the gate and the launch behind it",
	   opts, (unsigned long long)(vmm->stats.gate_device - dev0));

	/* 3: an op that may call libraries */
	landed = map_one(vmm, c[1], &va[1]);
	h0 = tp_vmm_now_ns(vmm);
	t = gated_work(vmm, TP_WORK_OP, &h1, &ret);
	ok(!ret && landed > h0 && t >= landed + WORK_NS &&
	   (dev_ops ? h1 == h0 : h1 >= landed),
	   "sim %s: an op's library calls: the %s waits", opts,
	   dev_ops ? "stream" : "caller");

	/* 4: anything else (a copy) waits on the host, whatever the key */
	landed = map_one(vmm, c[2], &va[2]);
	h0 = tp_vmm_now_ns(vmm);
	t = gated_work(vmm, TP_WORK_ANY, &h1, &ret);
	ok(!ret && landed > h0 && h1 >= landed && t >= landed + WORK_NS,
	   "sim %s: other work: the caller waits until the map lands", opts);

	for (int i = 0; i < 3; i++) {
		tp_vmm_unmap(vmm, va[i], c[i], NR);
		tp_vmm_chunks_put(vmm, c[i], NR);
		tp_vmm_release(vmm, va[i], NR * vmm->granularity);
	}
	ok(!tp_vmm_sync_all(vmm), "sim %s: syncs clean", opts);
	skip(1, "sim %s: a failed map on a thread of its own (cuda)", opts);
}

/* The stand-in driver's test hooks, or NULL elsewhere. */
static void *hook(const char *name)
{
	const char *lib = getenv("TPAGER_TEST_CUDA_LIBRARY");
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	void *f = h ? dlsym(h, name) : NULL;

	if (h)
		dlclose(h);	/* still loaded: the backend holds it */
	return f;
}

static void cuda_body(struct tp_vmm *vmm)
{
	void (*hold)(int) = (void (*)(int))hook("fake_cuda_hold_maps");
	void (*fail)(unsigned) = (void (*)(unsigned))hook("fake_cuda_fail_maps");
	int (*mapped)(uintptr_t) = (int (*)(uintptr_t))hook("fake_cuda_mapped");
	size_t g = vmm->granularity, len = NR * g;
	struct tp_event *ev = tp_vmm_event_create(vmm);
	struct tp_event *other = tp_vmm_event_create(vmm);
	unsigned char *pattern = malloc(len), *back = malloc(len);
	void *buf = tp_vmm_host_alloc(vmm, len);
	struct tp_chunk *c[NR], *d[NR];
	int ret, pending, other_q, h_spare;
	uintptr_t va, vb;
	uint64_t dev0;

	if (!hold || !fail || !mapped) {
		skip(PER_CASE, "cuda: not the stand-in driver");
		return;
	}
	if (!ev || !other || !pattern || !back || !buf)
		bail_out("cuda: events and buffers");
	if (!vmm->deferred->ahead.device) {
		ok(0, "cuda: the streams wait for maps on the device");
		skip(PER_CASE - 1, "cuda: no wait on the device");
		return;
	}
	ok(1, "cuda: the streams wait for maps on the device");
	vt_fill(pattern, len, vt_seed() + 7);
	ret = tp_vmm_reserve(vmm, len, &va) ?: tp_vmm_reserve(vmm, len, &vb);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, NR);
	if (ret)
		bail_out("cuda: reserve and take: %d", ret);

	/* 2-3: the gate returns with the map held; the stream waits */
	hold(1);
	dev0 = vmm->stats.gate_device;
	ret = tp_vmm_map_ahead(vmm, va, c, NR);
	ret = ret ?: tp_vmm_gate_work(vmm, TP_STREAM_COMPUTE, TP_WORK_KERNELS);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_event_record(vmm, other, TP_STREAM_D2H);
	pending = ret ? 0 : vmm->ops->event_query(vmm, ev);
	other_q = ret ? 0 : vmm->ops->event_query(vmm, other);
	hold(0);
	ok(!ret && pending == -EAGAIN && other_q == 0 &&
	   vmm->stats.gate_device - dev0 == 1,
	   "cuda: the gate returns while the map is held; work behind it waits (%d), another stream's does not (%d)",
	   pending, other_q);
	ret = ret ?: tp_vmm_event_sync(vmm, ev);
	ret = ret ?: tp_vmm_copy_h2d(vmm, va, pattern, len, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_copy_d2h(vmm, back, va, len, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_sync_all(vmm);
	ok(!ret && !memcmp(pattern, back, len),
	   "cuda: the map made, the stream goes on and the bytes copied in come back");

	/* 4-6: the map fails while the stream waits for it */
	ret = tp_vmm_chunks_take(vmm, d, NR);
	if (ret)
		bail_out("cuda: take: %d", ret);
	hold(1);
	fail(1);
	ret = tp_vmm_map_ahead(vmm, vb, d, NR);
	ret = ret ?: tp_vmm_gate_work(vmm, TP_STREAM_COMPUTE, TP_WORK_KERNELS);
	ret = ret ?: tp_vmm_event_record(vmm, ev, TP_STREAM_COMPUTE);
	hold(0);
	ok(!ret && vmm->ops->event_sync(vmm, ev) == 0,
	   "cuda: a map that fails behind a wait on the device releases the stream: no hang");
	h_spare = mapped(vb);
	ok(h_spare && h_spare == mapped(vb + (NR - 1) * g) &&
	   h_spare != mapped(va),
	   "cuda: one spare page stands at each of its pages (handle %d)",
	   h_spare);
	ok(tp_vmm_sync_all(vmm) == -ENOMEM &&
	   tp_vmm_gate_work(vmm, TP_STREAM_COMPUTE, TP_WORK_KERNELS) ==
	   -ENOMEM,
	   "cuda: the error is sticky: the sync and the next gate return it");
	/* Closing tears down what the failure left. */
	tp_vmm_event_put(vmm, ev);
	tp_vmm_event_put(vmm, other);
	tp_vmm_host_free(vmm, buf, len);
	free(pattern);
	free(back);
}

static void body(struct tp_vmm *vmm, const char *name)
{
	static const char *const gates[] = { "kernels", "host", "ops" };

	if (!strcmp(name, "cuda"))
		cuda_body(vmm);
	else
		sim_body(vmm, gates[vmm->map_gate]);
}

int main(void)
{
	static const struct vt_case cases[] = {
		{ "sim", "vmm.sim.profile=h200" },
		{ "sim", "vmm.sim.profile=h200,vmm.map_gate=host" },
		{ "sim", "vmm.sim.profile=h200,vmm.map_gate=ops" },
		{ "cuda", NULL },
		{ NULL, NULL },
	};

	/* A wait on the host where the device should wait never ends. */
	alarm(60);
	setenv("FAKE_CUDA_MAP_DELAY_US", "0", 1);
	return vt_run_cases(cases, PER_CASE, 2 << 20, POOL, body);
}
