/* SPDX-License-Identifier: MIT */
/*
 * The host backend: the vmm's semantics on Linux virtual memory.
 *
 * A reservation is an anonymous PROT_NONE, MAP_NORESERVE mapping; physical
 * memory is one memfd, a chunk an offset in it; mapping puts the chunk's
 * pages at the reservation's address with MAP_FIXED|MAP_SHARED, so the
 * same bytes can appear at any page of any range (real remapping), and
 * unmapping puts the PROT_NONE reservation back so a touch faults.
 *
 * Each copy stream has a worker thread that plays its copy engine: a FIFO
 * of copies, each started once the events it waits on have completed.
 * The compute stream's work runs on the caller's thread. An event is a
 * vector of per-stream sequence numbers: it has completed when every
 * stream has completed that much of its work. Stream completion is
 * monotonic, so a set of waits collapses to one maximum per stream.
 *
 * One file, past the usual length: one backend's ops table, whose copy
 * engines, events and mappings share the backend's lock and stream state
 * (struct host_backend), private to this file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "vmm/backend_host.h"
#include "vmm/calls.h"
#include "vmm/event.h"
#include "vmm/host_prep.h"
#include "vmm/vmm.h"

#define HOST_DEFAULT_DEVICE_BYTES	(4ULL << 30)
/*
 * Completion times kept per stream, by sequence number, for event timing;
 * an event older than this many completions is timed when first seen
 * complete (query, sync, elapsed) instead.
 */
#define HOST_DONE_RING			256u
/* Copies at least this long are split among an engine's threads. */
#define HOST_SPLIT_MIN			(1u << 20)

/* Sequence numbers of work each stream must have completed. */
struct host_need {
	uint64_t seq[TP_NR_STREAMS];
};

struct host_event {
	struct tp_event base;
	struct host_need need;
	uint64_t rec_ns;		/* host time of the record */
	uint64_t done_ns;		/* when the stream reached it; 0: not known */
	bool recorded;
};

struct host_copy {
	struct host_copy *next;
	void *dst;
	const void *src;
	size_t len;
	uint64_t seq;
	struct host_need wait;
};

struct host_backend;

/* A helper thread of an engine copies one slice of a split copy. */
struct host_helper {
	struct host_backend *h;
	struct host_stream *st;
	pthread_t thread;
	char *dst;
	const char *src;
	size_t len;
	uint64_t gen;			/* job handed out */
};

struct host_stream {
	struct host_backend *h;
	enum tp_stream id;
	pthread_t thread;
	bool started;
	bool gated;
	struct host_copy *head, **tail;
	uint64_t enqueued, completed;
	uint64_t done_ns[HOST_DONE_RING];	/* by completed % ring */
	struct host_need wait;		/* applies to the next work */
	struct host_helper *helpers;	/* copy_threads - 1 of them */
	unsigned nr_helpers;
	uint64_t job_gen;		/* last split job handed out */
	unsigned job_left;		/* helpers still copying */
};

struct host_backend {
	int memfd;
	off_t memfd_size;
	size_t page;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* any progress: broadcast */
	bool stopping;
	/* tp_vmm_host_fail_events(): what every event query and wait
	 * returns, as a driver does once the device has failed */
	int events_fail;
	struct host_stream streams[TP_NR_STREAMS];
	/* Host swap allocated and written ahead of need (host_prepare). */
	struct tp_host_preparer *prep;
};

static struct host_backend *hb(struct tp_vmm *vmm)
{
	return vmm->priv;
}

static bool need_met(const struct host_backend *h, const struct host_need *n)
{
	int s;

	for (s = 0; s < TP_NR_STREAMS; s++)
		if (h->streams[s].completed < n->seq[s])
			return false;
	return true;
}

static void need_merge(struct host_need *dst, const struct host_need *src)
{
	int s;

	for (s = 0; s < TP_NR_STREAMS; s++)
		if (src->seq[s] > dst->seq[s])
			dst->seq[s] = src->seq[s];
}

/* --- copy engines ----------------------------------------------------- */

static void *helper_main(void *arg)
{
	struct host_helper *hp = arg;
	struct host_backend *h = hp->h;
	struct host_stream *st = hp->st;
	uint64_t seen = 0;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->stopping && hp->gen == seen)
			pthread_cond_wait(&h->cond, &h->lock);
		if (hp->gen == seen)
			break;
		seen = hp->gen;
		pthread_mutex_unlock(&h->lock);
		memcpy(hp->dst, hp->src, hp->len);
		pthread_mutex_lock(&h->lock);
		st->job_left--;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/*
 * Copy @c, sharing it with the stream's helper threads when it is long.
 * Called and returns with h->lock held.
 */
static void engine_copy(struct host_stream *st, const struct host_copy *c)
{
	struct host_backend *h = st->h;
	unsigned parts = st->nr_helpers + 1, i;
	size_t slice;

	if (!st->nr_helpers || c->len < HOST_SPLIT_MIN) {
		pthread_mutex_unlock(&h->lock);
		memcpy(c->dst, c->src, c->len);
		pthread_mutex_lock(&h->lock);
		return;
	}
	/* Slices of whole cache lines; the engine copies the last one. */
	slice = (c->len / parts + 63) & ~(size_t)63;
	st->job_gen++;
	st->job_left = 0;
	for (i = 0; i < st->nr_helpers; i++) {
		struct host_helper *hp = &st->helpers[i];
		size_t off = slice * i;

		if (off >= c->len)
			break;
		hp->dst = (char *)c->dst + off;
		hp->src = (const char *)c->src + off;
		hp->len = c->len - off < slice ? c->len - off : slice;
		hp->gen = st->job_gen;
		st->job_left++;
	}
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	if (slice * i < c->len)
		memcpy((char *)c->dst + slice * i,
		       (const char *)c->src + slice * i, c->len - slice * i);
	pthread_mutex_lock(&h->lock);
	while (st->job_left)
		pthread_cond_wait(&h->cond, &h->lock);
}

static void *engine_main(void *arg)
{
	struct host_stream *st = arg;
	struct host_backend *h = st->h;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct host_copy *c = st->head;

		if (!c && h->stopping)
			break;
		if (!c || st->gated || !need_met(h, &c->wait)) {
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		engine_copy(st, c);
		/* Dequeue only now: the copy was in flight until here. */
		st->head = c->next;
		if (!st->head)
			st->tail = &st->head;
		st->completed = c->seq;
		st->done_ns[c->seq % HOST_DONE_RING] = tp_vmm_mono_ns();
		free(c);
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Wait until @n is met. Called with h->lock held. */
static void wait_need(struct host_backend *h, const struct host_need *n)
{
	while (!need_met(h, n))
		pthread_cond_wait(&h->cond, &h->lock);
}

/*
 * Compute-stream work runs on the caller's thread: wait for what the
 * stream was told to wait on, then count the work as done.
 */
static void compute_begin(struct host_backend *h)
{
	struct host_stream *st = &h->streams[TP_STREAM_COMPUTE];

	pthread_mutex_lock(&h->lock);
	wait_need(h, &st->wait);
	memset(&st->wait, 0, sizeof(st->wait));
	pthread_mutex_unlock(&h->lock);
}

static void compute_end(struct host_backend *h)
{
	struct host_stream *st = &h->streams[TP_STREAM_COMPUTE];

	pthread_mutex_lock(&h->lock);
	st->completed = ++st->enqueued;
	st->done_ns[st->completed % HOST_DONE_RING] = tp_vmm_mono_ns();
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static int enqueue_copy(struct tp_vmm *vmm, void *dst, const void *src,
			size_t len, enum tp_stream s)
{
	struct host_backend *h = hb(vmm);
	struct host_stream *st = &h->streams[s];
	struct host_copy *c;

	if (s == TP_STREAM_COMPUTE) {
		compute_begin(h);
		memcpy(dst, src, len);
		compute_end(h);
		return 0;
	}
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->next = NULL;
	c->dst = dst;
	c->src = src;
	c->len = len;
	pthread_mutex_lock(&h->lock);
	c->seq = ++st->enqueued;
	c->wait = st->wait;
	*st->tail = c;
	st->tail = &c->next;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static int host_copy_d2h(struct tp_vmm *vmm, void *host, uintptr_t va,
			 size_t len, enum tp_stream s)
{
	return enqueue_copy(vmm, host, (const void *)va, len, s);
}

static int host_copy_h2d(struct tp_vmm *vmm, uintptr_t va, const void *host,
			 size_t len, enum tp_stream s)
{
	return enqueue_copy(vmm, (void *)va, host, len, s);
}

/* --- events ------------------------------------------------------------ */

static int host_event_create(struct tp_vmm *vmm, struct tp_event **ev)
{
	struct host_event *he = calloc(1, sizeof(*he));

	if (!he)
		return -ENOMEM;
	*ev = &he->base;
	return 0;
}

static void host_event_destroy(struct tp_vmm *vmm, struct tp_event *ev)
{
	free(container_of(ev, struct host_event, base));
}

static int host_event_record(struct tp_vmm *vmm, struct tp_event *ev,
			     enum tp_stream s)
{
	struct host_event *he = container_of(ev, struct host_event, base);
	struct host_backend *h = hb(vmm);
	struct host_stream *st = &h->streams[s];

	pthread_mutex_lock(&h->lock);
	/* Everything enqueued so far, and what later work would wait on. */
	he->need = st->wait;
	he->need.seq[s] = st->enqueued;
	he->rec_ns = tp_vmm_mono_ns();
	he->done_ns = 0;
	he->recorded = true;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/*
 * Fix the time the streams reached @he, once it has completed: the later
 * of its record and the completion of the last work it waits for (what a
 * GPU timestamps). Called with h->lock held.
 */
static void event_stamp(struct host_backend *h, struct host_event *he)
{
	uint64_t t = he->rec_ns;
	int s;

	if (he->done_ns || !need_met(h, &he->need))
		return;
	for (s = 0; s < TP_NR_STREAMS; s++) {
		const struct host_stream *st = &h->streams[s];
		uint64_t seq = he->need.seq[s];

		if (!seq || st->completed - seq >= HOST_DONE_RING)
			continue;
		if (st->done_ns[seq % HOST_DONE_RING] > t)
			t = st->done_ns[seq % HOST_DONE_RING];
	}
	he->done_ns = t;
}

static int host_stream_wait(struct tp_vmm *vmm, enum tp_stream s,
			    struct tp_event *ev)
{
	struct host_event *he = container_of(ev, struct host_event, base);
	struct host_backend *h = hb(vmm);

	pthread_mutex_lock(&h->lock);
	need_merge(&h->streams[s].wait, &he->need);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static int host_event_query(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct host_event *he = container_of(ev, struct host_event, base);
	struct host_backend *h = hb(vmm);
	bool done;

	int ret;

	pthread_mutex_lock(&h->lock);
	done = need_met(h, &he->need);
	if (done && he->recorded)
		event_stamp(h, he);
	ret = h->events_fail ? h->events_fail : done ? 0 : -EAGAIN;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static int host_event_sync(struct tp_vmm *vmm, struct tp_event *ev)
{
	struct host_event *he = container_of(ev, struct host_event, base);
	struct host_backend *h = hb(vmm);

	int ret;

	pthread_mutex_lock(&h->lock);
	while (!h->events_fail && !need_met(h, &he->need))
		pthread_cond_wait(&h->cond, &h->lock);
	if (!h->events_fail && he->recorded)
		event_stamp(h, he);
	ret = h->events_fail;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static int host_event_elapsed_ns(struct tp_vmm *vmm, struct tp_event *a,
				 struct tp_event *b, uint64_t *ns)
{
	struct host_event *ha = container_of(a, struct host_event, base);
	struct host_event *hb_ = container_of(b, struct host_event, base);
	struct host_backend *h = hb(vmm);
	int ret = 0;

	pthread_mutex_lock(&h->lock);
	if (!ha->recorded || !hb_->recorded) {
		ret = -EINVAL;
	} else if (!need_met(h, &ha->need) || !need_met(h, &hb_->need)) {
		ret = -EAGAIN;
	} else {
		event_stamp(h, ha);
		event_stamp(h, hb_);
		*ns = hb_->done_ns > ha->done_ns ? hb_->done_ns - ha->done_ns : 0;
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static int host_stream_sync(struct tp_vmm *vmm, enum tp_stream s)
{
	struct host_backend *h = hb(vmm);
	struct host_stream *st = &h->streams[s];
	struct host_need n;

	pthread_mutex_lock(&h->lock);
	n = st->wait;
	n.seq[s] = st->enqueued;
	wait_need(h, &n);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static int host_launch(struct tp_vmm *vmm, enum tp_stream s, const char *name,
		       uint64_t cost_ns, int (*fn)(void *arg), void *arg)
{
	struct host_backend *h = hb(vmm);
	int ret = 0;

	if (s != TP_STREAM_COMPUTE) {
		/* Work on a copy stream: wait for that stream to drain first. */
		host_stream_sync(vmm, s);
		return fn ? fn(arg) : 0;
	}
	compute_begin(h);
	if (fn)
		ret = fn(arg);
	compute_end(h);
	return ret;
}

int tp_vmm_host_gate(struct tp_vmm *vmm, enum tp_stream s, bool closed)
{
	struct host_backend *h;

	if (vmm->ops != &tp_vmm_host_ops || s == TP_STREAM_COMPUTE ||
	    (unsigned)s >= TP_NR_STREAMS)
		return -EINVAL;
	h = hb(vmm);
	pthread_mutex_lock(&h->lock);
	h->streams[s].gated = closed;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

int tp_vmm_host_fail_events(struct tp_vmm *vmm, int err)
{
	struct host_backend *h;

	if (vmm->ops != &tp_vmm_host_ops || err > 0)
		return -EINVAL;
	h = hb(vmm);
	pthread_mutex_lock(&h->lock);
	h->events_fail = err;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* --- address space and chunks ------------------------------------------ */

static int host_reserve(struct tp_vmm *vmm, size_t len, uintptr_t *va)
{
	size_t gran = vmm->va_align;
	uintptr_t base, start;
	void *p;

	/* Over-reserve to align the range to va_align, as cuda does. */
	p = mmap(NULL, len + gran, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	base = (uintptr_t)p;
	start = (base + gran - 1) & ~(uintptr_t)(gran - 1);
	if (start > base)
		munmap(p, start - base);
	if (start + len < base + len + gran)
		munmap((void *)(start + len), base + len + gran - (start + len));
	*va = start;
	return 0;
}

static int host_release(struct tp_vmm *vmm, uintptr_t va, size_t len)
{
	return munmap((void *)va, len) ? -errno : 0;
}

static int host_chunk_create(struct tp_vmm *vmm, struct tp_chunk *c)
{
	struct host_backend *h = hb(vmm);
	off_t off = (off_t)c->index * (off_t)vmm->granularity;
	off_t end = off + (off_t)c->pages * (off_t)vmm->granularity;

	/* Handles are placed low in the memfd's space: it grows to fit. */
	if (end > h->memfd_size) {
		if (ftruncate(h->memfd, end))
			return -errno;
		h->memfd_size = end;
	}
	c->handle = (uint64_t)off;
	return 0;
}

static void host_chunk_destroy(struct tp_vmm *vmm, struct tp_chunk *c)
{
	struct host_backend *h = hb(vmm);

	/* Give the memory back now; the offset is reused on re-creation. */
	fallocate(h->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)c->handle, (off_t)c->pages * (off_t)vmm->granularity);
}

/* Put the faulting reservation back over [@va, @va + @len). */
static int restore_reserved(uintptr_t va, size_t len)
{
	void *p = mmap((void *)va, len, PROT_NONE,
		       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? -errno : 0;
}

/* The memfd offset of page @i of a run whose per-page array is @c. */
static uint64_t page_offset(size_t gran, struct tp_chunk *const *c, size_t i)
{
	size_t first = i;

	while (first && c[first - 1] == c[i])
		first--;
	return c[i]->handle + (uint64_t)(i - first) * gran;
}

static int host_map(struct tp_vmm *vmm, uintptr_t va,
		    struct tp_chunk *const *chunks, size_t n)
{
	struct host_backend *h = hb(vmm);
	size_t gran = vmm->granularity, i = 0, run;
	int ret;

	while (i < n) {
		uint64_t off = page_offset(gran, chunks, i);
		void *p;

		/* Pages adjacent in the memfd go in one mmap: a handle's
		 * own, and handles that happen to lie side by side. */
		for (run = 1; i + run < n; run++)
			if (chunks[i + run] != chunks[i + run - 1] &&
			    chunks[i + run]->handle != off + run * gran)
				break;
		p = mmap((void *)(va + i * gran), run * gran, PROT_NONE,
			 MAP_FIXED | MAP_SHARED, h->memfd, (off_t)off);
		if (p == MAP_FAILED) {
			ret = -errno;
			if (i)
				restore_reserved(va, i * gran);
			return ret;
		}
		i += run;
	}
	return 0;
}

static int host_set_access(struct tp_vmm *vmm, uintptr_t va,
			   struct tp_chunk *const *chunks, size_t n,
			   unsigned prot)
{
	int p = prot == TP_PROT_RW ? PROT_READ | PROT_WRITE : PROT_NONE;
	size_t len = n * vmm->granularity;

	if (mprotect((void *)va, len, p))
		return -errno;
#ifdef MADV_POPULATE_WRITE
	/*
	 * Fill the page tables of the fresh mapping in one call: otherwise
	 * the first copy into it (a reload) takes a fault per page, which
	 * costs more than the copy. Only a hint: older kernels refuse it.
	 */
	if (p != PROT_NONE)
		madvise((void *)va, len, MADV_POPULATE_WRITE);
#endif
	return 0;
}

static int host_unmap(struct tp_vmm *vmm, uintptr_t va,
		      struct tp_chunk *const *chunks, size_t n)
{
	return restore_reserved(va, n * vmm->granularity);
}

/* --- host buffers, time ---------------------------------------------- */

static void *page_aligned(size_t len, size_t page)
{
	void *p;
	int ret;

	ret = posix_memalign(&p, page, len);
	if (ret) {
		errno = ret;
		return NULL;
	}
	return p;
}

static void *host_host_alloc(struct tp_vmm *vmm, size_t len)
{
	return page_aligned(len, hb(vmm)->page);
}

static void host_host_free(struct tp_vmm *vmm, void *p, size_t len)
{
	free(p);
}

/* Prepared ahead: allocated and written, as cuda's is faulted in. */
static void *obtain_written(size_t len, void *arg)
{
	void *p = page_aligned(len, *(const size_t *)arg);

	if (p)
		memset(p, 0, len);
	return p;
}

static void *host_host_prepare(struct tp_vmm *vmm, size_t len)
{
	return tp_host_prep_start(hb(vmm)->prep, len);
}

static void *host_host_prepared(struct tp_vmm *vmm, void *token, bool wait,
				size_t *len)
{
	return tp_host_prep_finish(token, wait, len);
}

static uint64_t host_now_ns(struct tp_vmm *vmm)
{
	return tp_vmm_mono_ns();
}

/* --- open and close ---------------------------------------------------- */

static int open_memfd(void)
{
#ifdef HAVE_MEMFD_CREATE
	return memfd_create("tpager-chunks", MFD_CLOEXEC);
#else
	return (int)syscall(SYS_memfd_create, "tpager-chunks", 1u /* CLOEXEC */);
#endif
}

static void stop_engines(struct host_backend *h)
{
	int s;
	unsigned i;

	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	for (s = 0; s < TP_NR_STREAMS; s++)
		h->streams[s].gated = false;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	for (s = 0; s < TP_NR_STREAMS; s++) {
		struct host_stream *st = &h->streams[s];

		if (st->started)
			pthread_join(st->thread, NULL);
		for (i = 0; i < st->nr_helpers; i++)
			pthread_join(st->helpers[i].thread, NULL);
		free(st->helpers);
	}
}

static int start_engine(struct host_backend *h, struct host_stream *st,
			unsigned nr_helpers)
{
	unsigned i;
	int ret;

	st->helpers = calloc(nr_helpers ? nr_helpers : 1, sizeof(*st->helpers));
	if (!st->helpers)
		return -ENOMEM;
	for (i = 0; i < nr_helpers; i++) {
		st->helpers[i].h = h;
		st->helpers[i].st = st;
		ret = pthread_create(&st->helpers[i].thread, NULL, helper_main,
				     &st->helpers[i]);
		if (ret)
			return -ret;
		st->nr_helpers++;
	}
	ret = pthread_create(&st->thread, NULL, engine_main, st);
	if (ret)
		return -ret;
	st->started = true;
	return 0;
}

static int host_open(struct tp_vmm *vmm, const struct tp_vmm_conf *conf)
{
	struct host_backend *h;
	long page = sysconf(_SC_PAGESIZE);
	unsigned helpers;
	int s, ret;

	if (page <= 0 || conf->chunk_size % (uint64_t)page) {
		tp_log(TP_LOG_ERROR, "vmm: host: vmm.chunk_size %llu is not a multiple of the page size %ld",
		       (unsigned long long)conf->chunk_size, page);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->page = (size_t)page;
	h->prep = tp_host_preparer_new(obtain_written, &h->page);
	if (!h->prep) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	h->memfd = open_memfd();
	if (h->memfd < 0) {
		ret = -errno;
		tp_log(TP_LOG_ERROR, "vmm: host: memfd_create failed");
		goto err_free;
	}
	vmm->priv = h;
	vmm->granularity = conf->chunk_size;
	vmm->device_bytes = conf->device_memory ? conf->device_memory :
			    HOST_DEFAULT_DEVICE_BYTES;

	helpers = conf->host_copy_threads > 1 ?
		  (unsigned)conf->host_copy_threads - 1 : 0;
	for (s = 0; s < TP_NR_STREAMS; s++) {
		struct host_stream *st = &h->streams[s];

		st->h = h;
		st->id = (enum tp_stream)s;
		st->tail = &st->head;
		if (s == TP_STREAM_COMPUTE)
			continue;
		ret = start_engine(h, st, helpers);
		if (ret)
			goto err_stop;
	}
	return 0;

err_stop:
	stop_engines(h);
	close(h->memfd);
err_free:
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	tp_host_preparer_free(h->prep);
	free(h);
	vmm->priv = NULL;
	return ret;
}

static void host_close(struct tp_vmm *vmm)
{
	struct host_backend *h = hb(vmm);

	/* Engines finish their queues before they stop. */
	stop_engines(h);
	close(h->memfd);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	tp_host_preparer_free(h->prep);
	free(h);
	vmm->priv = NULL;
}

const struct tp_vmm_ops tp_vmm_host_ops = {
	.name = "host",
	.device = TP_DEVICE_CPU,
	.open = host_open,
	.close = host_close,
	.reserve = host_reserve,
	.release = host_release,
	.chunk_create = host_chunk_create,
	.chunk_destroy = host_chunk_destroy,
	.map = host_map,
	.set_access = host_set_access,
	.unmap = host_unmap,
	.copy_d2h = host_copy_d2h,
	.copy_h2d = host_copy_h2d,
	.event_create = host_event_create,
	.event_destroy = host_event_destroy,
	.event_record = host_event_record,
	.stream_wait = host_stream_wait,
	.event_query = host_event_query,
	.event_sync = host_event_sync,
	.stream_sync = host_stream_sync,
	.host_alloc = host_host_alloc,
	.host_prepare = host_host_prepare,
	.host_prepared = host_host_prepared,
	.host_free = host_host_free,
	.launch = host_launch,
	.stream_handle = NULL,
	.now_ns = host_now_ns,
	.event_elapsed_ns = host_event_elapsed_ns,
};
