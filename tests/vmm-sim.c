/* SPDX-License-Identifier: MIT */
/*
 * The sim backend's clocks advance by exactly the charged costs: driver
 * calls per chunk on the host clock (on the h200 profile, per handle and
 * more while copies are queued), copies and launches on their stream
 * from max(stream, host), events carrying their stream's time. The h100
 * profile charges what its table says: device memory, a handle's map and
 * set access, a copy. The h200 profile prices a convolution's scratch and
 * time by the bound on it (vmm.workspace_max), and a copy one way while
 * the other way copies at the shared rate it measured.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_sim.h"
#include "vmm/sim_profile.h"

#define MAP 1000u
#define ACCESS 300u
#define UNMAP 700u
#define LAT 5000u
#define CHUNK (64u << 10)
#define OPTS "vmm.sim.map_ns=1000,vmm.sim.set_access_ns=300," \
	     "vmm.sim.unmap_ns=700,vmm.sim.copy_latency_ns=5000," \
	     "vmm.sim.bandwidth=4"

static int ran;

static int mark(void *arg)
{
	ran = 1;
	return 0;
}

/* The whole scenario; records the clock at each step into @t. */
static int scenario(struct tp_vmm *vmm, uint64_t *t, int *q)
{
	struct tp_event *e1 = tp_vmm_event_create(vmm);
	struct tp_event *e2 = tp_vmm_event_create(vmm);
	struct tp_event *e3 = tp_vmm_event_create(vmm);
	struct tp_chunk *c[8];
	void *h1 = tp_vmm_host_alloc(vmm, 4 << 20);
	uintptr_t va;
	int ret;

	ret = tp_vmm_reserve(vmm, 8 * CHUNK, &va);
	ret = ret ?: tp_vmm_chunks_take(vmm, c, 8);
	ret = ret ?: tp_vmm_map(vmm, va, c, 8);
	t[0] = tp_vmm_now_ns(vmm);
	/* 4 MiB at 4 GB/s (4 bytes/ns) on d2h. */
	ret = ret ?: tp_vmm_copy_d2h(vmm, h1, va, 4 << 20, TP_STREAM_D2H);
	ret = ret ?: tp_vmm_event_record(vmm, e1, TP_STREAM_D2H);
	q[0] = tp_vmm_event_query(vmm, e1);
	t[1] = tp_vmm_now_ns(vmm);
	/* A page back on h2d, after the d2h. */
	ret = ret ?: tp_vmm_stream_wait(vmm, TP_STREAM_H2D, e1);
	ret = ret ?: tp_vmm_copy_h2d(vmm, va, h1, CHUNK, TP_STREAM_H2D);
	ret = ret ?: tp_vmm_event_record(vmm, e2, TP_STREAM_H2D);
	/* 50 us of compute, independent of both. */
	ret = ret ?: tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 50000, mark, NULL);
	ret = ret ?: tp_vmm_event_record(vmm, e3, TP_STREAM_COMPUTE);
	ret = ret ?: tp_vmm_event_sync(vmm, e3);
	t[2] = tp_vmm_now_ns(vmm);
	q[1] = tp_vmm_event_query(vmm, e1);
	ret = ret ?: tp_vmm_event_sync(vmm, e2);
	t[3] = tp_vmm_now_ns(vmm);
	q[2] = tp_vmm_event_query(vmm, e1);
	ret = ret ?: tp_vmm_unmap(vmm, va, c, 8);
	t[4] = tp_vmm_now_ns(vmm);
	tp_vmm_chunks_put(vmm, c, 8);
	tp_vmm_release(vmm, va, 8 * CHUNK);
	tp_vmm_event_put(vmm, e1);
	tp_vmm_event_put(vmm, e2);
	tp_vmm_event_put(vmm, e3);
	tp_vmm_host_free(vmm, h1, 4 << 20);
	return ret;
}

/* The h100 profile: an H100's memory, and its costs as its table says. */
static void h100(void)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h100;
	const uint64_t g = 2u << 20;
	struct tp_chunk *c[1];
	struct tp_vmm *vmm;
	uint64_t t0, want;
	uintptr_t va;
	char why[256];
	int ret;

	/* made on the caller's thread, whose clock then pays */
	vmm = vt_open("sim", g, "vmm.sim.profile=h100,vmm.map_ahead=off", why,
		      sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, 64 * g))
		bail_out("h100: %s", why);
	ok(vmm->device_bytes == 85017493504ull,
	   "h100: %llu bytes of device memory",
	   (unsigned long long)vmm->device_bytes);
	want = tp_sim_handle_ns(p, TP_SIM_MAP, g) +
	       tp_sim_handle_ns(p, TP_SIM_SET_ACCESS, g);
	if (tp_vmm_reserve(vmm, g, &va) || tp_vmm_chunks_take(vmm, c, 1))
		bail_out("h100: a handle");
	t0 = tp_vmm_now_ns(vmm);
	ret = tp_vmm_map(vmm, va, c, 1);
	t0 = tp_vmm_now_ns(vmm) - t0;
	ok(!ret && t0 == want && want == 41400,
	   "h100: a 2 MiB handle maps and gets access in %llu ns (2.2 + 39.2 us)",
	   (unsigned long long)t0);
	ok(tp_vmm_sim_copy_ns(vmm, 4u << 20) ==
	   p->copy_latency_ns + (uint64_t)llround((4u << 20) / 56.6),
	   "h100: a 4 MiB copy at 56.6 GB/s");
	tp_vmm_unmap(vmm, va, c, 1);
	tp_vmm_chunks_put(vmm, c, 1);
	tp_vmm_release(vmm, va, g);
	tp_vmm_close(vmm);
}

/* The copies' clock: when the last copy queued on @st lands. */
static uint64_t lands(struct tp_vmm *vmm, enum tp_stream st)
{
	struct tp_event *e = tp_vmm_event_create(vmm);
	uint64_t t;

	if (!e || tp_vmm_event_record(vmm, e, st) || tp_vmm_event_sync(vmm, e))
		bail_out("h200: an event");
	t = tp_vmm_now_ns(vmm);
	tp_vmm_event_put(vmm, e);
	return t;
}

/*
 * @small bytes one way, issued with @big already going the other way:
 * whether they land at the shared @rate (copies to host where @out).
 */
static bool beside(struct tp_vmm *vmm, void *h, uintptr_t va, bool out,
		   size_t small, size_t big, double rate)
{
	enum tp_stream st = out ? TP_STREAM_D2H : TP_STREAM_H2D;
	enum tp_stream other = out ? TP_STREAM_H2D : TP_STREAM_D2H;
	uint64_t t0 = tp_vmm_now_ns(vmm), want;
	bool good;

	if (out) {
		tp_vmm_copy_h2d(vmm, va, h, big, other);
		tp_vmm_copy_d2h(vmm, h, va, small, st);
	} else {
		tp_vmm_copy_d2h(vmm, h, va, big, other);
		tp_vmm_copy_h2d(vmm, va, h, small, st);
	}
	want = t0 + tp_sim_profile_h200.copy_latency_ns +
	       (uint64_t)llround(small / rate);
	good = lands(vmm, st) == want;
	lands(vmm, other);
	return good;
}

/*
 * The h200 link: alone, each way at link_bytes_per_ns; a copy into the
 * device issued while a copy out still runs goes at link_duplex_h2d
 * for as long as they overlap, then at the full rate; one out while one
 * in runs, at link_duplex_d2h. A copy out queued behind compute is not
 * copying while it waits: a copy in meanwhile goes at the full rate.
 */
static void h200_duplex(void)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h200;
	const uint64_t g = 2u << 20, lat = p->copy_latency_ns;
	const size_t big = 64u << 20, small = 8u << 20;
	struct tp_event *ec = NULL;
	struct tp_chunk *c[32];
	struct tp_vmm *vmm;
	uint64_t t0, alone, out_end, want;
	void *h = NULL;
	uintptr_t va;
	char why[256];
	double both;

	vmm = vt_open("sim", g, "vmm.sim.profile=h200,vmm.map_ahead=off", why,
		      sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, 64 * g) ||
	    tp_vmm_reserve(vmm, 32 * g, &va) || tp_vmm_chunks_take(vmm, c, 32) ||
	    tp_vmm_map(vmm, va, c, 32) || !(h = tp_vmm_host_alloc(vmm, big)))
		bail_out("h200: %s", why);
	ok(p->link_duplex_h2d > 0 && p->link_duplex_h2d < p->link_bytes_per_ns &&
	   p->link_duplex_d2h > 0 && p->link_duplex_d2h < p->link_bytes_per_ns,
	   "h200: each way is slower while the other copies (%.1f, %.1f < %.1f GB/s)",
	   p->link_duplex_d2h, p->link_duplex_h2d, p->link_bytes_per_ns);

	/* Out alone. */
	t0 = tp_vmm_now_ns(vmm);
	tp_vmm_copy_d2h(vmm, h, va, big, TP_STREAM_D2H);
	alone = lands(vmm, TP_STREAM_D2H) - t0;
	ok(alone == tp_vmm_sim_copy_ns(vmm, big),
	   "h200: 64 MiB out alone in %llu ns, the link's rate",
	   (unsigned long long)alone);

	/* 8 MiB in, issued with 64 MiB out in flight: shared all along. */
	ok(beside(vmm, h, va, false, small, big, p->link_duplex_h2d),
	   "h200: 8 MiB in beside 64 MiB out at the shared %.1f GB/s",
	   p->link_duplex_h2d);

	/* 64 MiB in beside 8 MiB out: shared until the out lands. */
	t0 = tp_vmm_now_ns(vmm);
	tp_vmm_copy_d2h(vmm, h, va, small, TP_STREAM_D2H);
	tp_vmm_copy_h2d(vmm, va, h, big, TP_STREAM_H2D);
	out_end = t0 + tp_vmm_sim_copy_ns(vmm, small);
	both = (double)(out_end - (t0 + lat)) * p->link_duplex_h2d;
	want = out_end + (uint64_t)llround((big - both) / p->link_bytes_per_ns);
	ok(lands(vmm, TP_STREAM_H2D) == want,
	   "h200: 64 MiB in, shared while 8 MiB go out, then alone: lands at %llu ns",
	   (unsigned long long)(want - t0));

	/* Out beside in: the other way's shared rate. */
	ok(beside(vmm, h, va, true, small, big, p->link_duplex_d2h),
	   "h200: 8 MiB out beside 64 MiB in at the shared %.1f GB/s",
	   p->link_duplex_d2h);

	/* Out behind 10 ms of compute; in now, done long before. */
	if (!(ec = tp_vmm_event_create(vmm)) ||
	    tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 10000000, NULL, NULL) ||
	    tp_vmm_event_record(vmm, ec, TP_STREAM_COMPUTE) ||
	    tp_vmm_stream_wait(vmm, TP_STREAM_D2H, ec))
		bail_out("h200: compute to wait for");
	t0 = tp_vmm_now_ns(vmm);
	tp_vmm_copy_d2h(vmm, h, va, small, TP_STREAM_D2H);
	tp_vmm_copy_h2d(vmm, va, h, big, TP_STREAM_H2D);
	ok(lands(vmm, TP_STREAM_H2D) == t0 + tp_vmm_sim_copy_ns(vmm, big),
	   "h200: 64 MiB in while a copy out waits for compute: the link's rate");
	lands(vmm, TP_STREAM_D2H);
	tp_vmm_event_put(vmm, ec);
	tp_vmm_host_free(vmm, h, big);
	tp_vmm_unmap(vmm, va, c, 32);
	tp_vmm_chunks_put(vmm, c, 32);
	tp_vmm_release(vmm, va, 32 * g);
	tp_vmm_close(vmm);
}

/* The sim backend on the h200 profile, maps on the caller's thread. */
static struct tp_vmm *open_h200(void)
{
	struct tp_vmm *vmm;
	char why[256];

	vmm = vt_open("sim", 2u << 20, "vmm.sim.profile=h200,vmm.map_ahead=off",
		      why, sizeof(why));
	if (!vmm)
		bail_out("h200: %s", why);
	return vmm;
}

/*
 * The h200 profile's unmaps cost more while copies are queued: of 16
 * handles unmapped one after the other, those made before a copy queued
 * on another range lands pay the busy price, the rest the idle one; each
 * handle's price rounded as one call's.
 */
static void busy_unmaps(void)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h200;
	const uint64_t g = 2u << 20;
	struct tp_chunk *c[16], *o[8];
	uint64_t t0, now, end, idle, busy, want = 0;
	unsigned nbusy = 0;
	struct tp_vmm *vmm;
	uintptr_t va, vo;
	char why[256];
	void *h;

	vmm = vt_open("sim", g, "vmm.sim.profile=h200,vmm.map_ahead=off,"
		      "vmm.mapping=chunks", why, sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, 32 * g))
		bail_out("h200: %s", why);
	h = tp_vmm_host_alloc(vmm, 8 * g);
	if (!h || tp_vmm_reserve(vmm, 16 * g, &va) ||
	    tp_vmm_reserve(vmm, 8 * g, &vo) || tp_vmm_chunks_take(vmm, c, 16) ||
	    tp_vmm_chunks_take(vmm, o, 8) || tp_vmm_map(vmm, va, c, 16) ||
	    tp_vmm_map(vmm, vo, o, 8))
		bail_out("h200: ranges");
	/* 16 MiB to host: about 330 us, some five busy unmaps. */
	if (tp_vmm_copy_d2h(vmm, h, vo, 8 * g, TP_STREAM_D2H))
		bail_out("h200: the copy");
	idle = (uint64_t)llround(p->run_factor[TP_SIM_UNMAP] *
				 (double)tp_sim_handle_ns(p, TP_SIM_UNMAP, g));
	busy = (uint64_t)llround((double)tp_sim_handle_ns(p, TP_SIM_UNMAP, g) *
				 p->busy_unmap * p->run_factor[TP_SIM_UNMAP]);
	t0 = now = tp_vmm_now_ns(vmm);
	end = t0 + p->copy_latency_ns;	/* at least: the copy's own time */
	end += (uint64_t)llround((double)(8 * g) / p->link_bytes_per_ns);
	for (int i = 0; i < 16; i++) {
		bool b = now < end;

		nbusy += b;
		now += b ? busy : idle;
		want += b ? busy : idle;
	}
	if (tp_vmm_unmap(vmm, va, c, 16))
		bail_out("h200: the unmap");
	now = tp_vmm_now_ns(vmm) - t0;
	ok(now == want && nbusy > 1 && nbusy < 16,
	   "h200: 16 unmaps while a copy lands: %u at %llu ns, the rest at %llu (%llu ns, want %llu)",
	   nbusy, (unsigned long long)busy, (unsigned long long)idle,
	   (unsigned long long)now, (unsigned long long)want);
	tp_vmm_stream_sync(vmm, TP_STREAM_D2H);
	tp_vmm_unmap(vmm, vo, o, 8);
	tp_vmm_chunks_put(vmm, c, 16);
	tp_vmm_chunks_put(vmm, o, 8);
	tp_vmm_release(vmm, va, 16 * g);
	tp_vmm_release(vmm, vo, 8 * g);
	tp_vmm_host_free(vmm, h, 8 * g);
	tp_vmm_close(vmm);
}

/* The clock's advance for mapping (access granted) and unmapping 8
 * handles. */
static uint64_t remap_ns(struct tp_vmm *vmm, uint64_t g)
{
	struct tp_chunk *c[8];
	uint64_t t0;
	uintptr_t va;

	if (tp_vmm_pool_create(vmm, 16 * g) || tp_vmm_reserve(vmm, 8 * g, &va) ||
	    tp_vmm_chunks_take(vmm, c, 8))
		bail_out("driver_scale: a range");
	t0 = tp_vmm_now_ns(vmm);
	/* A map grants access too: one map and one set access call. */
	if (tp_vmm_map(vmm, va, c, 8) || tp_vmm_unmap(vmm, va, c, 8))
		bail_out("driver_scale: the calls");
	t0 = tp_vmm_now_ns(vmm) - t0;
	tp_vmm_chunks_put(vmm, c, 8);
	tp_vmm_release(vmm, va, 8 * g);
	return t0;
}

/* What one call costs on the h200 profile with @scale: the profile's
 * price of the handle scaled, then as a training run pays it. */
static uint64_t h200_call(enum tp_sim_driver_call call, uint64_t g,
			  double scale)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h200;
	uint64_t ns = (uint64_t)llround(scale *
					(double)tp_sim_handle_ns(p, call, g));

	return (uint64_t)llround(p->run_factor[call] * (double)ns);
}

/*
 * vmm.sim.driver_scale: every driver call costs that many times the
 * profile's (or the cost keys') price, on the h200 profile and on custom
 * costs alike; a scale of 0 is refused.
 */
static void driver_scale(void)
{
	const uint64_t g = 2u << 20;
	uint64_t want, got;
	struct tp_vmm *vmm;
	char why[256];

	vmm = vt_open("sim", g, "vmm.sim.profile=h200,vmm.map_ahead=off,"
		      "vmm.mapping=chunks,vmm.sim.driver_scale=1.5",
		      why, sizeof(why));
	if (!vmm)
		bail_out("driver_scale: %s", why);
	want = 8 * (h200_call(TP_SIM_MAP, g, 1.5) +
		    h200_call(TP_SIM_SET_ACCESS, g, 1.5) +
		    h200_call(TP_SIM_UNMAP, g, 1.5));
	got = remap_ns(vmm, g);
	tp_vmm_close(vmm);
	ok(got == want && want > 8 * (h200_call(TP_SIM_MAP, g, 1) +
				      h200_call(TP_SIM_SET_ACCESS, g, 1) +
				      h200_call(TP_SIM_UNMAP, g, 1)),
	   "driver_scale 1.5 on h200: 8 handles remapped in %llu ns (want %llu)",
	   (unsigned long long)got, (unsigned long long)want);

	vmm = vt_open("sim", CHUNK, OPTS ",vmm.sim.driver_scale=2", why,
		      sizeof(why));
	if (!vmm)
		bail_out("driver_scale: %s", why);
	got = remap_ns(vmm, CHUNK);
	tp_vmm_close(vmm);
	ok(got == 8 * 2 * (MAP + ACCESS + UNMAP),
	   "driver_scale 2 on the cost keys: %llu ns (want %u)",
	   (unsigned long long)got, 8 * 2 * (MAP + ACCESS + UNMAP));

	vmm = vt_open("sim", CHUNK, OPTS ",vmm.sim.driver_scale=0", why,
		      sizeof(why));
	ok(!vmm && strstr(why, "Invalid argument"),
	   "driver_scale 0 is refused: %s", vmm ? "(opened)" : why);
	if (vmm)
		tp_vmm_close(vmm);
}

/*
 * The h200 profile's launch window: the host issues launch_window
 * launches on the compute stream at issue_ns each and goes on; the next
 * one waits until the first has ended, as the cuda backend waits for the
 * oldest of its timed launches. Copies do not count.
 */
static void launch_window(void)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h200;
	const uint64_t cost = 1000000, issue = p->issue_ns;
	const unsigned w = p->launch_window;
	struct tp_vmm *vmm = open_h200();
	uint64_t t0, ahead;

	t0 = tp_vmm_now_ns(vmm);
	for (unsigned i = 0; i < w; i++)
		tp_vmm_launch(vmm, TP_STREAM_COMPUTE, cost, NULL, NULL);
	ahead = tp_vmm_now_ns(vmm) - t0;
	ok(w > 0 && ahead == w * issue,
	   "h200: %u launches of 1 ms cost the host their issue alone (%llu ns)",
	   w, (unsigned long long)ahead);
	tp_vmm_launch(vmm, TP_STREAM_COMPUTE, cost, NULL, NULL);
	ok(tp_vmm_now_ns(vmm) - t0 == issue + cost,
	   "h200: launch %u waits for the first to end (host at %llu ns, want %llu)",
	   w + 1, (unsigned long long)(tp_vmm_now_ns(vmm) - t0),
	   (unsigned long long)(issue + cost));
	tp_vmm_close(vmm);
}

/*
 * The h200 profile's host time to issue an op, by the op's name: a
 * backward convolution's from its table, an op it does not name and work
 * of no op's at the profile's issue_ns.
 */
static void issue_by_name(void)
{
	const struct tp_sim_profile *p = &tp_sim_profile_h200;
	struct tp_vmm *vmm = open_h200();
	uint64_t t0, conv, other, none;

	t0 = tp_vmm_now_ns(vmm);
	tp_vmm_launch_op(vmm, TP_STREAM_COMPUTE, "conv2d_bwd", TP_WORK_ANY, 0,
			 NULL, NULL);
	conv = tp_vmm_now_ns(vmm) - t0;
	t0 += conv;
	tp_vmm_launch_op(vmm, TP_STREAM_COMPUTE, "no_such_op", TP_WORK_ANY, 0,
			 NULL, NULL);
	other = tp_vmm_now_ns(vmm) - t0;
	t0 += other;
	tp_vmm_launch(vmm, TP_STREAM_COMPUTE, 0, NULL, NULL);
	none = tp_vmm_now_ns(vmm) - t0;
	ok(conv == tp_sim_issue_ns(p, "conv2d_bwd") && conv > 20 * p->issue_ns,
	   "h200: a backward convolution keeps the host %llu ns to issue",
	   (unsigned long long)conv);
	ok(other == p->issue_ns && none == p->issue_ns,
	   "h200: an op the table does not name, and no op, %llu and %llu ns",
	   (unsigned long long)other, (unsigned long long)none);
	tp_vmm_close(vmm);
}

/*
 * The h200 profile's convolutions: the fastest algorithms' scratch
 * (1780/392 of the largest tensor) within vmm.workspace_max; under a
 * bound below it, an algorithm taking the bound (at least the leanest's
 * 1/64) whose time is between the fastest's and 1.37 times it, on a log
 * scale of the scratch; other ops take none.
 */
static double lean_time(double fast, double largest, double bound)
{
	double need = largest * 1780.0 / 392.0, leanest = largest / 64;
	double f = bound <= leanest ? 1 : log(need / bound) / log(need / leanest);

	return fast * (1 + 0.37 * f);
}

static void workspace(void)
{
	const size_t mib = 1u << 20, big = 100 * mib, small = 50 * mib;
	struct tp_op_work w = { .flops = 4e11, .bytes = 3.0 * big };
	uint64_t fast, lean, tiny, none, bfast, blean;
	struct tp_vmm *vmm;
	size_t ws[5];
	char why[256];
	int rc;

	vmm = vt_open("sim", 2 * mib, "vmm.sim.profile=h200,vmm.map_ahead=off",
		      why, sizeof(why));
	if (!vmm)
		bail_out("h200: %s", why);
	w.largest = (double)big;
	rc = tp_vmm_op_workspace(vmm, "conv2d", big, &ws[0]) ?:
	     tp_vmm_op_workspace(vmm, "relu", big, &ws[1]) ?:
	     tp_vmm_op_ns(vmm, "conv2d", &w, &fast) ?:
	     tp_vmm_op_ns(vmm, "conv2d_bwd", &w, &bfast);
	ok(!rc && ws[0] == (size_t)((double)big * 1780.0 / 392.0) && !ws[1],
	   "workspace: no bound: a convolution takes %zu bytes, 1780/392 of its largest tensor; relu none",
	   ws[0]);
	tp_vmm_set_workspace_max(vmm, 256 * mib);
	rc = tp_vmm_op_workspace(vmm, "conv2d", big, &ws[2]) ?:
	     tp_vmm_op_workspace(vmm, "conv2d_bwd", small, &ws[3]) ?:
	     tp_vmm_op_ns(vmm, "conv2d", &w, &lean);
	ok(!rc && ws[2] == 256 * mib &&
	   ws[3] == (size_t)((double)small * 1780.0 / 392.0),
	   "workspace: 256 MiB bound: 100 MiB tensors take the bound's %zu bytes, 50 MiB ones still the fastest %zu",
	   ws[2], ws[3]);
	ok(fast > 0 && lean > fast &&
	   lean == (uint64_t)llround(lean_time((double)fast, big, 256.0 * mib)),
	   "workspace: under 256 MiB the convolution takes %llu ns, %.4f x %llu, between the fastest and the leanest",
	   (unsigned long long)lean, (double)lean / (double)fast,
	   (unsigned long long)fast);
	tp_vmm_set_workspace_max(vmm, mib);
	rc = tp_vmm_op_workspace(vmm, "conv2d", big, &ws[4]) ?:
	     tp_vmm_op_ns(vmm, "conv2d", &w, &tiny);
	ok(!rc && ws[4] == big / 64 &&
	   tiny == (uint64_t)llround((double)fast * 1.37),
	   "workspace: under 1 MiB the leanest: %zu bytes (1/64), 1.37 x the time",
	   ws[4]);
	tp_vmm_set_workspace_max(vmm, 256 * mib);
	w.largest = 0;
	rc = tp_vmm_op_ns(vmm, "conv2d", &w, &none);
	w.largest = (double)big;
	rc = rc ?: tp_vmm_op_ns(vmm, "conv2d_bwd", &w, &blean);
	ok(!rc && none == fast &&
	   blean == (uint64_t)llround(lean_time((double)bfast, big, 256.0 * mib)),
	   "workspace: an op that does not say its largest tensor is priced as the fastest; the backward convolution slows too");
	tp_vmm_close(vmm);
}

int main(void)
{
	/* Costs computed here from the configured numbers. */
	const uint64_t mapped = 8 * MAP + 8 * ACCESS;
	const uint64_t d2h = LAT + (4u << 20) / 4;
	const uint64_t h2d = LAT + CHUNK / 4;
	const uint64_t e1 = mapped + d2h, e2 = e1 + h2d, e3 = mapped + 50000;
	uint64_t t[5], t2[5];
	int q[3], q2[3];
	struct tp_vmm *vmm;
	char why[256];
	void *a, *b;
	uintptr_t r1, r2;

	plan_tests(36);
	vmm = vt_open("sim", CHUNK, OPTS, why, sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, 16 * CHUNK))
		bail_out("%s", why);
	ok(tp_vmm_now_ns(vmm) == 0, "the host clock starts at 0");
	ok(tp_vmm_sim_copy_ns(vmm, 4 << 20) == d2h,
	   "a 4 MiB copy costs %llu ns", (unsigned long long)d2h);
	ok_rc(scenario(vmm, t, q), "the scenario runs");
	ok(t[0] == mapped, "mapping 8 chunks: 8 x (%u + %u) = %llu ns (got %llu)",
	   MAP, ACCESS, (unsigned long long)mapped, (unsigned long long)t[0]);
	ok(t[1] == mapped && q[0] == -EAGAIN,
	   "an async copy does not move the host clock; its event is pending");
	ok(t[2] == e3, "the compute event lands at %llu (got %llu)",
	   (unsigned long long)e3, (unsigned long long)t[2]);
	ok(ran == 0, "the launch function is not run on sim");
	ok(q[1] == -EAGAIN, "the d2h (until %llu) is still pending then",
	   (unsigned long long)e1);
	ok(t[3] == e2, "the h2d waited for the d2h: done at %llu (got %llu)",
	   (unsigned long long)e2, (unsigned long long)t[3]);
	ok(q[2] == 0, "and the d2h has completed by then");
	ok(t[4] == e2 + 8 * UNMAP, "unmapping 8 chunks adds %u ns", 8 * UNMAP);
	tp_vmm_close(vmm);

	/* Deterministic: the same calls give the same clocks. */
	vmm = vt_open("sim", CHUNK, OPTS, why, sizeof(why));
	if (!vmm || tp_vmm_pool_create(vmm, 16 * CHUNK))
		bail_out("%s", why);
	ok(scenario(vmm, t2, q2) == 0 && memcmp(t, t2, sizeof(t)) == 0 &&
	   memcmp(q, q2, sizeof(q)) == 0, "a second run gives the same clocks");

	a = tp_vmm_host_alloc(vmm, 100);
	b = tp_vmm_host_alloc(vmm, 100);
	ok(a && b && a != b, "host buffers are distinct non-null tokens");
	ok(!tp_vmm_reserve(vmm, 2 * CHUNK, &r1) && !tp_vmm_reserve(vmm, CHUNK, &r2) &&
	   r1 % CHUNK == 0 && r2 % CHUNK == 0 && r2 >= r1 + 2 * CHUNK,
	   "reservations are aligned and do not overlap");
	tp_vmm_host_free(vmm, a, 100);
	tp_vmm_host_free(vmm, b, 100);
	tp_vmm_release(vmm, r1, 2 * CHUNK);
	tp_vmm_release(vmm, r2, CHUNK);
	tp_vmm_close(vmm);

	h100();
	h200_duplex();
	launch_window();
	issue_by_name();
	workspace();
	busy_unmaps();
	driver_scale();
	return exit_status();
}
