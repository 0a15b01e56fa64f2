/* SPDX-License-Identifier: MIT */
/*
 * The sim backend: no memory at all, only time. Each stream has a virtual
 * clock, and so does the host (the caller). Driver calls are charged to
 * the host clock: with vmm.sim.profile = custom, map, set access and
 * unmap per driver granule they span (at least one a call) from the
 * vmm.sim.* keys; with a measured profile (sim_profile.h), every call per
 * handle it touches, by the handle's size, as the driver charges, and the
 * issue of each op too. A copy or a launch on a stream starts when both
 * the stream and the host have got there and lasts its cost; events carry
 * the time of the stream they were recorded on. Everything is integer
 * nanoseconds and depends on nothing but the calls made, so a run is
 * exactly reproducible.
 *
 * Addresses are numbers from a counter (aligned to the chunk size, never
 * dereferenced) and host buffers are unique tokens. One rule of the
 * device is kept all the same: memory unmapped while a copy over it is
 * still in flight is a fault, and from then on every event query and
 * sync fails with -EIO, as on a GPU (the copies: sim_copies.h).
 *
 * One file, past the usual length: every call reads and advances the same
 * clocks (the host's, the streams', the played driver thread's) under one
 * lock, and the events are points on them.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "vmm/backend_sim.h"
#include "vmm/event.h"
#include "vmm/sim_copies.h"
#include "vmm/sim_profile.h"
#include "vmm/vmm.h"

#define SIM_DEFAULT_DEVICE_BYTES	(80ULL << 30)
/* Where the fake address space and the host tokens start. */
#define SIM_VA_BASE			(1ULL << 44)
#define SIM_HOST_BASE			(1ULL << 40)
#define SIM_HOST_ALIGN			4096u
/* Jobs of the played driver thread whose spans are kept. */
#define SIM_SPANS			128

struct sim_event {
	struct tp_event base;
	uint64_t time;			/* stream clock when recorded */
	/* When the stream got there: it waits for the host when idle. */
	uint64_t reached;
	bool recorded;
};

struct sim_backend {
	/* Queries and syncs may come from other threads. */
	pthread_mutex_t lock;
	struct tp_sim_copies copies;	/* in flight over device addresses */
	bool fault;			/* one unmapped under: sticky */
	uint64_t host;			/* the caller's clock */
	/*
	 * The library's driver thread, played: its clock, and whether the
	 * calls made now are its (worker_begin) rather than the caller's.
	 */
	uint64_t worker;
	bool on_worker;
	/* When the thread preparing host memory is free (host_prepare). */
	uint64_t prep_free;
	/* The lane not in @worker (worker_lane()), and which is. */
	uint64_t other_lane;
	unsigned lane;
	/*
	 * Lane 0 takes each job once it is ready, in the first gap its
	 * recent jobs left (a driver thread takes the first job ready, not
	 * the oldest): their spans, and where the one under way began.
	 */
	struct sim_span {
		uint64_t start, end;
	} spans[SIM_SPANS];
	unsigned nspans, next_span;
	uint64_t job_start;
	/*
	 * Maps made ahead (vmm.map_ahead): the runs the played thread
	 * mapped, by when each lands, so that a copy issued before is
	 * refused as the driver refuses it.
	 */
	struct tp_sim_copies landing;
	uint64_t stream[TP_NR_STREAMS];
	/*
	 * Each way's copies (0: to host, 1: to the device): when the run of
	 * copies that ended last began and ended, back to back. A stream
	 * waiting for an event is not copying: run_copy() asks these, not
	 * the streams' clocks, whether the other way is busy.
	 */
	uint64_t copy_from[2], copy_to[2];
	uintptr_t next_va;
	uintptr_t next_host;
	uint64_t map_ns, set_access_ns, unmap_ns, copy_latency_ns;
	uint64_t driver_granule;	/* bytes a driver cost covers */
	double driver_scale;		/* vmm.sim.driver_scale */
	bool sync;			/* vmm.sim.sync: the host waits for
					 * each launch on the compute stream */
	/*
	 * When the compute stream's last launches end, oldest first
	 * (profile->launch_window of them at most): the host waits for
	 * the oldest before it issues one past the window.
	 */
	uint64_t *window;
	unsigned window_head, window_count;
	double bytes_per_ns;		/* GB/s == bytes/ns */
	const struct tp_sim_profile *profile;	/* NULL: the keys' costs */
	/*
	 * The profile's costs by handle size, as interpolated: a model has
	 * a few handle sizes, and the policy prices a remap per candidate
	 * it scores (a log and an exp a call, a sixth of a replay's time).
	 */
	struct sim_cost_memo {
		uint64_t bytes;		/* 0: empty */
		uint64_t ns[TP_SIM_NR_CALLS];
	} memo[64];
};

static struct sim_backend *sb(struct tp_vmm *vmm)
{
	return vmm->priv;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Charge the thread making the call: the caller, or the driver thread. */
static void charge_host(struct tp_vmm *vmm, uint64_t ns)
{
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	if (s->on_worker)
		s->worker += ns;
	else
		s->host += ns;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Run @cost on stream @st: it starts once stream and host are there. On
 * the compute stream the host first waits, past the launch window
 * (profile->launch_window), for the oldest launch in it to end, and with
 * vmm.sim.sync for this one.
 */
static void run_on(struct sim_backend *s, enum tp_stream st, uint64_t cost)
{
	bool compute = st == TP_STREAM_COMPUTE;
	unsigned w = compute && s->window ? s->profile->launch_window : 0;

	pthread_mutex_lock(&s->lock);
	if (w && s->window_count == w) {
		s->host = max_u64(s->host, s->window[s->window_head]);
		s->window_head = (s->window_head + 1) % w;
		s->window_count--;
	}
	s->stream[st] = max_u64(s->stream[st], s->host) + cost;
	if (w)
		s->window[(s->window_head + s->window_count++) % w] =
			s->stream[st];
	if (compute && s->sync)
		s->host = s->stream[st];
	pthread_mutex_unlock(&s->lock);
}

/*
 * A copy of @len bytes on stream @st, to host where @to_host, after what
 * the stream holds. Where the profile says the other way slows it, the
 * part that runs while the other way's copies run goes at the shared
 * rate, before and after at the link's. The copies already queued the
 * other way keep their times: the one issued later carries the whole
 * slowdown, which keeps the model a clock per stream.
 */
static void run_copy(struct sim_backend *s, enum tp_stream st,
		     bool to_host, size_t len)
{
	const struct tp_sim_profile *p = s->profile;
	double shared = !p ? 0 : to_host ? p->link_duplex_d2h :
					   p->link_duplex_h2d;
	double full = s->bytes_per_ns, left = (double)len, room;
	unsigned way = to_host ? 0 : 1;
	uint64_t start, from, to, cost = 0;

	pthread_mutex_lock(&s->lock);
	start = max_u64(s->stream[st], s->host) + s->copy_latency_ns;
	from = max_u64(s->copy_from[!way], start);
	to = s->copy_to[!way];
	/* At the link's rate until the other way copies... */
	if (shared > 0 && to > from && left > (double)(from - start) * full) {
		cost = from - start;
		left -= (double)(from - start) * full;
		/* ...then shared while it does, then alone again. */
		room = (double)(to - from) * shared;
		if (left <= room) {
			cost += (uint64_t)llround(left / shared);
			left = 0;
		} else {
			cost += to - from;
			left -= room;
		}
	}
	cost += (uint64_t)llround(left / full);
	s->stream[st] = start + cost;
	if (start > s->copy_to[way])
		s->copy_from[way] = start;
	s->copy_to[way] = start + cost;
	pthread_mutex_unlock(&s->lock);
}

/* A driver call's cost as vmm.sim.driver_scale makes it. */
static uint64_t scaled(const struct sim_backend *s, int64_t ns)
{
	return (uint64_t)llround(s->driver_scale * (double)ns);
}

/* tp_sim_handle_ns() for the backend's profile, memoised by size, as
 * vmm.sim.driver_scale makes it. */
static uint64_t handle_ns(struct sim_backend *s, enum tp_sim_driver_call call,
			  uint64_t bytes)
{
	struct sim_cost_memo *m;

	m = &s->memo[(bytes / 4096 * 0x9e3779b97f4a7c15ull) >> 58];
	if (m->bytes != bytes) {
		for (int k = 0; k < TP_SIM_NR_CALLS; k++)
			m->ns[k] = scaled(s, (int64_t)tp_sim_handle_ns(s->profile,
								     k, bytes));
		m->bytes = bytes;
	}
	return m->ns[call];
}

/* The clock of the thread making the call. Under s->lock. */
static uint64_t *caller_clock(struct sim_backend *s)
{
	return s->on_worker ? &s->worker : &s->host;
}

/*
 * What @call costs on each of @k handles of @bytes under the profile,
 * made one after the other from @now: more while copies are queued, where
 * the profile measured it so, and as a training run pays it. Each
 * handle's price is rounded as one call's; the copies queued do not move
 * meanwhile, so the first handles pay the busy price until the clock
 * passes them. Under s->lock.
 */
static uint64_t handles_charge(struct tp_vmm *vmm,
			       enum tp_sim_driver_call call, uint64_t bytes,
			       size_t k, uint64_t now)
{
	struct sim_backend *s = sb(vmm);
	const struct tp_sim_profile *p = s->profile;
	double ns = (double)handle_ns(s, call, bytes), busy_ns = ns;
	uint64_t idle, busy, end;
	size_t nbusy = 0;
	bool slows = (call == TP_SIM_SET_ACCESS && p->busy_set_access > 0) ||
		     (call == TP_SIM_UNMAP && p->busy_unmap > 0);

	if (slows)
		busy_ns *= call == TP_SIM_UNMAP ? p->busy_unmap :
						   p->busy_set_access;
	if (p->run_factor[call] > 0) {
		ns *= p->run_factor[call];
		busy_ns *= p->run_factor[call];
	}
	idle = (uint64_t)llround(ns);
	busy = (uint64_t)llround(busy_ns);
	end = max_u64(s->stream[TP_STREAM_D2H], s->stream[TP_STREAM_H2D]);
	if (slows && end > now)
		nbusy = busy ? (size_t)((end - now + busy - 1) / busy) : k;
	if (nbusy > k)
		nbusy = k;
	return nbusy * busy + (k - nbusy) * idle;
}

/*
 * ... on every handle of a run of @n pages, each at the time the ones
 * before it leave, handles of one size priced together: one lock for the
 * call (a lock per handle was a sixth of a replay's time on the
 * contiguous pool, whose chunks are handles).
 */
static void charge_handles(struct tp_vmm *vmm, enum tp_sim_driver_call call,
			   struct tp_chunk *const *c, size_t n)
{
	struct sim_backend *s = sb(vmm);
	uint64_t *now;

	pthread_mutex_lock(&s->lock);
	now = caller_clock(s);
	for (size_t i = 0; i < n;) {
		size_t pages = c[i]->pages, k = 1;

		while (i + k * pages < n && c[i + k * pages]->pages == pages)
			k++;
		*now += handles_charge(vmm, call, (uint64_t)pages *
				       vmm->granularity, k, *now);
		i += k * pages;
	}
	pthread_mutex_unlock(&s->lock);
}

static void charge_handle(struct tp_vmm *vmm, enum tp_sim_driver_call call,
			  struct tp_chunk *c)
{
	charge_handles(vmm, call, &c, c->pages);
}

/*
 * The contiguous pool (vmm.mode = contiguous) models the caching
 * allocators the baselines ran on, which map their memory as they grow
 * and carve it into blocks without remapping: the maps it asks for to
 * place a tensor's run at its address are bookkeeping here, not driver
 * calls, and cost nothing (nor does the address range each tensor
 * reserves), and the handle a chunk gets on its first use costs its
 * share of a 2 MiB one (charge_growth()). Charged per chunk handle, as
 * they were (64 KiB for DTR's logs, which no GPU's driver makes), its
 * unconstrained replay of DTR's ResNet-32 log took 23.6 s, 23.3 of it
 * driver time, against 0.32 s on the chunked pool, and a baseline on it
 * was measured against that.
 */
static bool premapped(struct tp_vmm *vmm)
{
	return tp_vmm_pool_contiguous(vmm);
}

static int sim_reserve(struct tp_vmm *vmm, size_t len, uintptr_t *va)
{
	struct sim_backend *s = sb(vmm);

	if (s->profile && !premapped(vmm))
		charge_host(vmm, scaled(s, s->profile->reserve_ns));
	*va = (s->next_va + vmm->va_align - 1) / vmm->va_align * vmm->va_align;
	/* A free granule between ranges, so an overrun is never another
	 * range; len is a multiple of it (tp_vmm_reserve()). */
	s->next_va = *va + len + vmm->va_align;
	return 0;
}

static int sim_release(struct tp_vmm *vmm, uintptr_t va, size_t len)
{
	if (sb(vmm)->profile && !premapped(vmm))
		charge_host(vmm, scaled(sb(vmm), sb(vmm)->profile->reserve_ns));
	return 0;
}

/* The pool grows as an allocator's does, by the driver's 2 MiB granules:
 * @c's share of one (premapped()). */
static void charge_growth(struct tp_vmm *vmm, enum tp_sim_driver_call call,
			  const struct tp_chunk *c)
{
	const uint64_t granule = 2u << 20;
	struct sim_backend *s = sb(vmm);
	double share = (double)c->pages * (double)vmm->granularity /
		       (double)granule;
	uint64_t ns;

	pthread_mutex_lock(&s->lock);
	ns = (uint64_t)llround((double)handle_ns(s, call, granule) * share);
	pthread_mutex_unlock(&s->lock);
	charge_host(vmm, ns);
}

static int sim_chunk_create(struct tp_vmm *vmm, struct tp_chunk *c)
{
	c->handle = c->index;
	if (!sb(vmm)->profile)
		return 0;
	if (premapped(vmm))
		charge_growth(vmm, TP_SIM_CREATE, c);
	else
		charge_handle(vmm, TP_SIM_CREATE, c);
	return 0;
}

static void sim_chunk_destroy(struct tp_vmm *vmm, struct tp_chunk *c)
{
	if (!sb(vmm)->profile)
		return;
	if (premapped(vmm))
		charge_growth(vmm, TP_SIM_RELEASE, c);
	else
		charge_handle(vmm, TP_SIM_RELEASE, c);
}

/*
 * The driver maps, sets access and unmaps whole granules (2 MiB on NVIDIA
 * GPUs), and the vmm.sim.* costs are per granule: a call over @len bytes
 * is charged for the granules it spans, at least one. With
 * vmm.sim.driver_granule = 2M, a chunk smaller than 2 MiB (for byte
 * accuracy) does not multiply the cost of a run, and a call for a lone
 * small chunk still pays a whole driver call. 0: the granule is a chunk.
 */
static uint64_t sim_driver_ns(struct tp_vmm *vmm, uint64_t per_granule_ns,
			      size_t len)
{
	uint64_t g = sb(vmm)->driver_granule;
	uint64_t granules = (len + g - 1) / g;

	return (granules ? granules : 1) * per_granule_ns;
}

static int sim_map(struct tp_vmm *vmm, uintptr_t va,
		   struct tp_chunk *const *chunks, size_t n)
{
	if (premapped(vmm))
		return 0;
	if (sb(vmm)->profile)
		charge_handles(vmm, TP_SIM_MAP, chunks, n);
	else
		charge_host(vmm, sim_driver_ns(vmm, sb(vmm)->map_ns,
					       n * vmm->granularity));
	return 0;
}

static int sim_set_access(struct tp_vmm *vmm, uintptr_t va,
			  struct tp_chunk *const *chunks, size_t n,
			  unsigned prot)
{
	struct sim_backend *s = sb(vmm);

	/* The contiguous pool's grant is bookkeeping: nothing to price. */
	if (!premapped(vmm)) {
		if (s->profile)
			charge_handles(vmm, TP_SIM_SET_ACCESS, chunks, n);
		else
			charge_host(vmm, sim_driver_ns(vmm, s->set_access_ns,
						       n * vmm->granularity));
	}
	/* Made by the played thread: usable once its clock is there. */
	pthread_mutex_lock(&s->lock);
	if (s->on_worker)
		tp_sim_copies_note(&s->landing, va, n * vmm->granularity,
				   s->worker);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/*
 * A copy over [@va, @va + @len) issued now: -EINVAL, as the driver
 * answers, where a map made ahead of it lands only later (the driver
 * checks a copy's addresses when it is enqueued, whatever the stream
 * waits for); else noted, as in flight on @st until it is done.
 */
static int copy_check(struct tp_vmm *vmm, uintptr_t va, size_t len,
		      enum tp_stream st)
{
	struct sim_backend *s = sb(vmm);
	bool early;

	pthread_mutex_lock(&s->lock);
	early = tp_sim_copies_in_flight(&s->landing, va, va + len, s->host,
					s->host);
	pthread_mutex_unlock(&s->lock);
	if (early) {
		tp_log(TP_LOG_ERROR, "vmm: sim: a copy over %#lx issued before its map was made: the driver refuses it",
		       (unsigned long)va);
		return -EINVAL;
	}
	return 0;
}

static void copy_note(struct sim_backend *s, uintptr_t va, size_t len,
		      enum tp_stream st)
{
	pthread_mutex_lock(&s->lock);
	tp_sim_copies_note(&s->copies, va, len, s->stream[st]);
	pthread_mutex_unlock(&s->lock);
}

/*
 * An unmap of [@va, @end) now, on the thread making it, before a copy over
 * those addresses is done: the device's fault, sticky.
 */
static void unmap_check(struct tp_vmm *vmm, uintptr_t va, uintptr_t end)
{
	struct sim_backend *s = sb(vmm);
	bool first;

	pthread_mutex_lock(&s->lock);
	/* No unmap comes before both clocks: the played thread's lags. */
	first = !s->fault &&
		tp_sim_copies_in_flight(&s->copies, va, end,
					s->on_worker ? s->worker : s->host,
					s->profile && s->worker < s->host ?
					s->worker : s->host);
	s->fault |= first;
	pthread_mutex_unlock(&s->lock);
	if (first)
		tp_log(TP_LOG_ERROR, "vmm: sim: %#lx unmapped under a copy in flight: the device faults",
		       (unsigned long)va);
}

static int sim_unmap(struct tp_vmm *vmm, uintptr_t va,
		     struct tp_chunk *const *chunks, size_t n)
{
	unmap_check(vmm, va, va + n * vmm->granularity);
	if (premapped(vmm))
		return 0;
	if (sb(vmm)->profile)
		charge_handles(vmm, TP_SIM_UNMAP, chunks, n);
	else
		charge_host(vmm, sim_driver_ns(vmm, sb(vmm)->unmap_ns,
					       n * vmm->granularity));
	return 0;
}

uint64_t tp_vmm_sim_copy_ns(struct tp_vmm *vmm, size_t len)
{
	struct sim_backend *s = sb(vmm);

	return s->copy_latency_ns + (uint64_t)llround((double)len / s->bytes_per_ns);
}

static int sim_copy_d2h(struct tp_vmm *vmm, void *host, uintptr_t va,
			size_t len, enum tp_stream st)
{
	int ret = copy_check(vmm, va, len, st);

	if (ret)
		return ret;
	run_copy(sb(vmm), st, true, len);
	copy_note(sb(vmm), va, len, st);
	return 0;
}

static int sim_copy_h2d(struct tp_vmm *vmm, uintptr_t va, const void *host,
			size_t len, enum tp_stream st)
{
	int ret = copy_check(vmm, va, len, st);

	if (ret)
		return ret;
	run_copy(sb(vmm), st, false, len);
	copy_note(sb(vmm), va, len, st);
	return 0;
}

static int sim_event_create(struct tp_vmm *vmm, struct tp_event **ev)
{
	struct sim_event *se = calloc(1, sizeof(*se));

	if (!se)
		return -ENOMEM;
	*ev = &se->base;
	return 0;
}

static void sim_event_destroy(struct tp_vmm *vmm, struct tp_event *ev)
{
	free(container_of(ev, struct sim_event, base));
}

static int sim_event_record(struct tp_vmm *vmm, struct tp_event *ev,
			    enum tp_stream st)
{
	struct sim_event *se = container_of(ev, struct sim_event, base);
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	se->time = s->stream[st];
	se->reached = max_u64(s->stream[st], s->host);
	se->recorded = true;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_stream_wait(struct tp_vmm *vmm, enum tp_stream st,
			   struct tp_event *ev)
{
	struct sim_event *se = container_of(ev, struct sim_event, base);
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	s->stream[st] = max_u64(s->stream[st], se->time);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_event_query(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct sim_event *se = container_of(ev, struct sim_event, base);
	struct sim_backend *s = sb(vmm);
	bool done, fault;

	pthread_mutex_lock(&s->lock);
	done = se->time <= s->host;
	fault = s->fault;
	pthread_mutex_unlock(&s->lock);
	if (fault)
		return -EIO;
	return done ? 0 : -EAGAIN;
}

/*
 * The host waits until the clock *@t (read under the lock): 0, or -EIO
 * once the device has faulted.
 */
static int host_waits_for(struct sim_backend *s, const uint64_t *t)
{
	bool fault;

	pthread_mutex_lock(&s->lock);
	s->host = max_u64(s->host, *t);
	fault = s->fault;
	pthread_mutex_unlock(&s->lock);
	return fault ? -EIO : 0;
}

static int sim_event_sync(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct sim_event *se = container_of(ev, struct sim_event, base);

	return host_waits_for(sb(vmm), &se->time);
}

static int sim_event_elapsed_ns(struct tp_vmm *vmm, struct tp_event *a,
				struct tp_event *b, uint64_t *ns)
{
	struct sim_event *sa = container_of(a, struct sim_event, base);
	struct sim_event *se = container_of(b, struct sim_event, base);
	struct sim_backend *s = sb(vmm);
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (!sa->recorded || !se->recorded)
		ret = -EINVAL;
	else if (sa->time > s->host || se->time > s->host)
		ret = -EAGAIN;
	else
		*ns = se->reached > sa->reached ? se->reached - sa->reached : 0;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static int sim_stream_sync(struct tp_vmm *vmm, enum tp_stream st)
{
	struct sim_backend *s = sb(vmm);

	return host_waits_for(s, &s->stream[st]);
}

/* Host memory's two halves by the profile: faulting in, registering. */
static uint64_t fault_ns(const struct sim_backend *s, size_t len)
{
	if (!s->profile || s->profile->fault_bytes_per_ns <= 0)
		return 0;
	return (uint64_t)((double)len / s->profile->fault_bytes_per_ns);
}

static uint64_t register_ns(const struct sim_backend *s, size_t len)
{
	if (!s->profile || s->profile->register_bytes_per_ns <= 0)
		return 0;
	return (uint64_t)((double)len / s->profile->register_bytes_per_ns);
}

static void *host_token(struct sim_backend *s, size_t len)
{
	uintptr_t p = s->next_host;

	s->next_host += (len + SIM_HOST_ALIGN - 1) & ~(uintptr_t)(SIM_HOST_ALIGN - 1);
	return (void *)p;
}

static void *sim_host_alloc(struct tp_vmm *vmm, size_t len)
{
	struct sim_backend *s = sb(vmm);

	/* Host memory is the caller's time, in proportion. */
	charge_host(vmm, fault_ns(s, len) + register_ns(s, len));
	return host_token(s, len);
}

/* Memory prepared ahead: ready when the preparing thread is done. */
struct sim_prep {
	size_t len;
	uint64_t ready;
};

/*
 * The preparing thread takes preparations one after the other, each
 * from when it was asked for: its own clock, s->prep_free.
 */
static void *sim_host_prepare(struct tp_vmm *vmm, size_t len)
{
	struct sim_backend *s = sb(vmm);
	struct sim_prep *sp = malloc(sizeof(*sp));

	if (!sp)
		return NULL;
	pthread_mutex_lock(&s->lock);
	sp->len = len;
	sp->ready = max_u64(s->prep_free, s->on_worker ? s->worker : s->host) +
		    fault_ns(s, len);
	s->prep_free = sp->ready;
	pthread_mutex_unlock(&s->lock);
	return sp;
}

static void *sim_host_prepared(struct tp_vmm *vmm, void *token, bool wait,
			       size_t *len)
{
	struct sim_backend *s = sb(vmm);
	struct sim_prep *sp = token;
	uint64_t *now;

	pthread_mutex_lock(&s->lock);
	now = s->on_worker ? &s->worker : &s->host;
	if (*now < sp->ready && !wait) {
		pthread_mutex_unlock(&s->lock);
		errno = EAGAIN;
		return NULL;
	}
	*now = max_u64(*now, sp->ready);
	pthread_mutex_unlock(&s->lock);
	charge_host(vmm, register_ns(s, sp->len));
	*len = sp->len;
	free(sp);
	return host_token(s, *len);
}

static void sim_host_free(struct tp_vmm *vmm, void *p, size_t len)
{
}

/*
 * There is no data to compute on: the work is its cost. @fn is not called
 * (it would be handed addresses that must not be dereferenced).
 */
static int sim_launch(struct tp_vmm *vmm, enum tp_stream st, const char *name,
		      uint64_t cost_ns, int (*fn)(void *arg), void *arg)
{
	struct sim_backend *s = sb(vmm);

	/* The host issues the op, then the stream runs it. */
	if (s->profile)
		charge_host(vmm, tp_sim_issue_ns(s->profile, name));
	run_on(s, st, cost_ns);
	return 0;
}

/*
 * How lean an algorithm a convolution whose largest tensor is @largest
 * bytes runs under vmm.workspace_max: 0 where the fastest's scratch fits,
 * 1 where no more than the leanest's does, and between, how far below
 * the fastest's scratch the bound is on a log scale (cuDNN ranks
 * algorithms of every size between: on an H200, ResNet-50's step took
 * 1.027 times as long under a 256 MiB bound and 1.114 under 64 MiB).
 */
static double conv_lean(struct tp_vmm *vmm, const struct tp_sim_profile *p,
			double largest)
{
	double limit = (double)tp_vmm_workspace_max(vmm);
	double fast = largest * p->conv_workspace;
	double lean = largest * p->conv_lean_workspace;

	if (!limit || fast <= limit)
		return 0;
	if (limit <= lean)
		return 1;
	return log(fast / limit) / log(fast / lean);
}

/* The scratch it then takes: the bound's, or the leanest's. */
static double conv_scratch(struct tp_vmm *vmm, const struct tp_sim_profile *p,
			   double largest)
{
	double limit = (double)tp_vmm_workspace_max(vmm);
	double lean = largest * p->conv_lean_workspace;

	if (!conv_lean(vmm, p, largest))
		return largest * p->conv_workspace;
	return limit > lean ? limit : lean;
}

static bool is_conv(const char *name)
{
	return !strncmp(name, "conv2d", 6);
}

static int sim_op_workspace(struct tp_vmm *vmm, const char *name,
			    size_t largest, size_t *bytes)
{
	const struct tp_sim_profile *p = sb(vmm)->profile;

	if (!p)
		return -ENOENT;
	*bytes = 0;
	if (is_conv(name))
		*bytes = (size_t)conv_scratch(vmm, p, (double)largest);
	return 0;
}

static double sim_remap_handle_ns(struct tp_vmm *vmm, uint64_t bytes)
{
	const struct tp_sim_profile *p = sb(vmm)->profile;
	static const enum tp_sim_driver_call remap[] = {
		TP_SIM_MAP, TP_SIM_SET_ACCESS, TP_SIM_UNMAP,
	};
	double ns = 0;

	if (!p)
		return -1;
	for (size_t i = 0; i < sizeof(remap) / sizeof(remap[0]); i++)
		ns += (p->run_factor[remap[i]] > 0 ?
		       p->run_factor[remap[i]] : 1) *
		      (double)handle_ns(sb(vmm), remap[i], bytes);
	return ns;
}

static int sim_op_ns(struct tp_vmm *vmm, const char *name,
		     const struct tp_op_work *w, uint64_t *ns)
{
	const struct tp_sim_profile *p = sb(vmm)->profile;

	if (!p)
		return -ENOENT;
	*ns = tp_sim_op_ns(p, name, w->flops, w->bytes);
	if (is_conv(name))
		*ns = (uint64_t)llround((double)*ns *
					(1 + (p->conv_lean_slowdown - 1) *
					 conv_lean(vmm, p, w->largest)));
	return 0;
}

static uint64_t sim_now_ns(struct tp_vmm *vmm)
{
	struct sim_backend *s = sb(vmm);
	uint64_t t;

	pthread_mutex_lock(&s->lock);
	t = s->on_worker ? s->worker : s->host;
	pthread_mutex_unlock(&s->lock);
	return t;
}

/*
 * The driver thread starts a job queued at @queued and gated by @after
 * (may be NULL) once the job is there and @after completed on its stream:
 * its releases and unmaps (lane 0) in the first gap from then that its
 * recent jobs left, as a thread taking whichever job is ready first; the
 * maps it makes ahead (lane 1) in order, once the one before is done.
 */
static void sim_worker_begin(struct tp_vmm *vmm, struct tp_event *after,
			     uint64_t queued)
{
	struct sim_event *se = after ?
			       container_of(after, struct sim_event, base) :
			       NULL;
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	if (s->lane == 0) {
		/* From when it is ready, past the spans it falls in. */
		uint64_t t = queued;
		bool moved = true;

		if (se && t < se->time)
			t = se->time;
		while (moved) {
			moved = false;
			for (unsigned i = 0; i < s->nspans; i++)
				if (t >= s->spans[i].start && t < s->spans[i].end) {
					t = s->spans[i].end;
					moved = true;
				}
		}
		s->worker = t;
		s->job_start = t;
	} else {
		if (s->worker < queued)
			s->worker = queued;
		if (se && s->worker < se->time)
			s->worker = se->time;
	}
	s->on_worker = true;
	pthread_mutex_unlock(&s->lock);
}

static uint64_t sim_worker_end(struct tp_vmm *vmm)
{
	struct sim_backend *s = sb(vmm);
	uint64_t t;

	pthread_mutex_lock(&s->lock);
	s->on_worker = false;
	t = s->worker;
	if (s->lane == 0 && t > s->job_start) {
		s->spans[s->next_span] = (struct sim_span){ s->job_start, t };
		s->next_span = (s->next_span + 1) % SIM_SPANS;
		if (s->nspans < SIM_SPANS)
			s->nspans++;
	}
	pthread_mutex_unlock(&s->lock);
	return t;
}

static int sim_event_when(struct tp_vmm *vmm, struct tp_event *ev,
			  uint64_t *t)
{
	struct sim_event *se = container_of(ev, struct sim_event, base);
	struct sim_backend *s = sb(vmm);
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (se->recorded)
		*t = se->time;
	else
		ret = -EINVAL;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/*
 * The driver thread is played where the costs are a measured driver's
 * (per handle): the vmm.sim.* keys' are per granule of a call, the model
 * of a driver without one.
 */
static bool sim_plays_worker(struct tp_vmm *vmm)
{
	return sb(vmm)->profile != NULL;
}

static void sim_worker_lane(struct tp_vmm *vmm, unsigned lane)
{
	struct sim_backend *s = sb(vmm);
	uint64_t t;

	pthread_mutex_lock(&s->lock);
	if (lane != s->lane) {
		t = s->worker;
		s->worker = s->other_lane;
		s->other_lane = t;
		s->lane = lane;
	}
	pthread_mutex_unlock(&s->lock);
}

/* The played thread is the one maps go ahead on: with a profile. */
static bool sim_can_map_ahead(struct tp_vmm *vmm)
{
	return sb(vmm)->profile;
}

static void sim_wait_until(struct tp_vmm *vmm, uint64_t t)
{
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	s->host = max_u64(s->host, t);
	pthread_mutex_unlock(&s->lock);
}

/* Streams wait for the played thread's maps on their own clocks. */
static int sim_map_gate_open(struct tp_vmm *vmm)
{
	return sb(vmm)->profile ? 0 : -EOPNOTSUPP;
}

static int sim_stream_wait_map(struct tp_vmm *vmm, enum tp_stream st,
			       uint32_t seq, uint64_t t)
{
	struct sim_backend *s = sb(vmm);

	pthread_mutex_lock(&s->lock);
	s->stream[st] = max_u64(s->stream[st], t);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_open(struct tp_vmm *vmm, const struct tp_vmm_conf *conf)
{
	struct sim_backend *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	if (conf->sim_profile == TP_SIM_PROFILE_H200)
		s->profile = &tp_sim_profile_h200;
	else if (conf->sim_profile == TP_SIM_PROFILE_H100)
		s->profile = &tp_sim_profile_h100;
	vmm->granularity = conf->chunk_size;
	vmm->device_bytes = conf->device_memory ? conf->device_memory :
			    s->profile ? s->profile->device_bytes :
			    SIM_DEFAULT_DEVICE_BYTES;
	s->next_va = (SIM_VA_BASE + vmm->granularity - 1) /
		     vmm->granularity * vmm->granularity;
	s->next_host = SIM_HOST_BASE;
	/* 0 where the configuration does not say: a vmm made directly. */
	s->driver_scale = conf->sim_driver_scale > 0 ? conf->sim_driver_scale : 1;
	s->map_ns = scaled(s, conf->sim_map_ns);
	s->set_access_ns = scaled(s, conf->sim_set_access_ns);
	s->unmap_ns = scaled(s, conf->sim_unmap_ns);
	s->driver_granule = conf->sim_driver_granule ?
			    conf->sim_driver_granule : vmm->granularity;
	s->copy_latency_ns = (uint64_t)conf->sim_copy_latency_ns;
	s->bytes_per_ns = conf->sim_bandwidth;
	s->sync = conf->sim_sync;
	if (s->profile) {
		s->copy_latency_ns = s->profile->copy_latency_ns;
		s->bytes_per_ns = s->profile->link_bytes_per_ns;
	}
	if (s->profile && s->profile->launch_window && !s->sync) {
		s->window = calloc(s->profile->launch_window,
				   sizeof(*s->window));
		if (!s->window) {
			pthread_mutex_destroy(&s->lock);
			free(s);
			return -ENOMEM;
		}
	}
	if (s->bytes_per_ns <= 0) {
		pthread_mutex_destroy(&s->lock);
		free(s->window);
		free(s);
		return -EINVAL;
	}
	vmm->link_bytes_per_ns = s->bytes_per_ns;
	vmm->priv = s;
	return 0;
}

static void sim_close(struct tp_vmm *vmm)
{
	struct sim_backend *s = sb(vmm);

	pthread_mutex_destroy(&s->lock);
	free(s->window);
	free(s);
	vmm->priv = NULL;
}

const struct tp_vmm_ops tp_vmm_sim_ops = {
	.name = "sim",
	.device = TP_DEVICE_NONE,
	.open = sim_open,
	.close = sim_close,
	.reserve = sim_reserve,
	.release = sim_release,
	.chunk_create = sim_chunk_create,
	.chunk_destroy = sim_chunk_destroy,
	.map = sim_map,
	.set_access = sim_set_access,
	.unmap = sim_unmap,
	.copy_d2h = sim_copy_d2h,
	.copy_h2d = sim_copy_h2d,
	.event_create = sim_event_create,
	.event_destroy = sim_event_destroy,
	.event_record = sim_event_record,
	.stream_wait = sim_stream_wait,
	.event_query = sim_event_query,
	.event_sync = sim_event_sync,
	.event_elapsed_ns = sim_event_elapsed_ns,
	.stream_sync = sim_stream_sync,
	.host_alloc = sim_host_alloc,
	.host_prepare = sim_host_prepare,
	.host_prepared = sim_host_prepared,
	.host_free = sim_host_free,
	.launch = sim_launch,
	.op_ns = sim_op_ns,
	.op_workspace = sim_op_workspace,
	.remap_handle_ns = sim_remap_handle_ns,
	.worker_lane = sim_worker_lane,
	.can_map_ahead = sim_can_map_ahead,
	.worker_begin = sim_worker_begin,
	.worker_end = sim_worker_end,
	.wait_until = sim_wait_until,
	.map_gate_open = sim_map_gate_open,
	.stream_wait_map = sim_stream_wait_map,
	.plays_worker = sim_plays_worker,
	.event_when = sim_event_when,
	.stream_handle = NULL,
	.now_ns = sim_now_ns,
};
