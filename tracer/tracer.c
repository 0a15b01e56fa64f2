/* SPDX-License-Identifier: MIT */
/*
 * The stats.trace writer (see tracer.h). Spans wait in a FIFO until the
 * event recorded after their work has completed; finished records are
 * buffered and written in batches by a thread of their own
 * (tracer_writer.c), the JSON array opened at start and closed at
 * tp_tracer_close(), so a trace is valid only once closed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "tracer/tracer_json.h"
#include "tracer/tracer_writer.h"
#include "tracer/tracer.h"

#define TRACE_SPANS	256u	/* spans in flight at first; grows, never waits */
#define TRACE_BUF	4096u	/* records buffered before a write */

/*
 * One tid per stream, named like the stream (Perfetto shows the names),
 * then the host's: the driver calls it made, its waits on the device, the
 * driver thread's calls and the ops whose issue took long.
 */
#define TID_DRIVER	(TP_NR_STREAMS + 1)
#define TID_WAITS	(TP_NR_STREAMS + 2)
#define TID_DRIVER_BG	(TP_NR_STREAMS + 3)
#define TID_ISSUE	(TP_NR_STREAMS + 4)
static const char *const track_name[TID_ISSUE] = {
	[TP_STREAM_COMPUTE] = "compute",
	[TP_STREAM_D2H] = "d2h",
	[TP_STREAM_H2D] = "h2d",
	[TID_DRIVER - 1] = "host: driver calls",
	[TID_WAITS - 1] = "host: waits on the device",
	[TID_DRIVER_BG - 1] = "host: driver thread",
	[TID_ISSUE - 1] = "host: ops issued (over 100 us)",
};
/* An op's time on the issuing thread worth a span on its own track. */
#define TRACE_ISSUE_MIN_NS	100000u

static const char *const call_name[] = {
	[TP_CALL_RESERVE] = "reserve",
	[TP_CALL_RELEASE] = "release range",
	[TP_CALL_CHUNK_CREATE] = "create handle",
	[TP_CALL_CHUNK_DESTROY] = "release handle",
	[TP_CALL_MAP] = "map",
	[TP_CALL_SET_ACCESS] = "set access",
	[TP_CALL_UNMAP] = "unmap",
	[TP_CALL_HOST_ALLOC] = "pin host memory",
};

struct trace_span {
	struct tp_event *a, *b;		/* created once per slot, reused */
	bool op;			/* an op (a and b) or copies (b only) */
	bool ended;			/* b recorded */
	bool dropped;			/* a failed launch: not written */
	enum tp_stream s;
	const char *cat;
	char name[TRACE_NAME];
	uint64_t tensor, bytes, issue_ns;
	struct tp_op_work work;		/* an op's, when known */
	bool has_work;
};


struct tp_tracer {
	struct tp_vmm *vmm;
	FILE *f;
	char *path;
	int err;			/* first write error */
	struct tp_event *epoch;
	uint64_t t0;			/* backend clock at the epoch */
	struct trace_span *span;	/* a FIFO ring of @cap slots */
	unsigned cap, head, count;
	uint64_t last_end[TP_NR_STREAMS];
	struct trace_rec *buf;		/* records being filled */
	unsigned nr_buf;
	struct tp_tracer_writer w;	/* writes full buffers ... */
	bool writing;			/* ... where its thread started */
	uint64_t last_dev, last_host, last_c_ts;
	bool sampled;
	struct tp_vmm_observer obs;	/* installed on the vmm */
	pthread_t owner;		/* the caller's thread */
	/* the driver thread's calls, waiting for the caller's to take them */
	pthread_mutex_t bg_lock;
	struct trace_rec *bg;
	unsigned nr_bg, cap_bg;
};

static void check_io(struct tp_tracer *tr)
{
	bool failed = tr->writing ? tp_tracer_writer_failed(&tr->w) :
				    ferror(tr->f);

	if (!tr->err && failed) {
		tr->err = -EIO;
		tp_log(TP_LOG_ERROR, "stats.trace: writing %s failed; the trace is incomplete",
		       tr->path);
	}
}

static void flush(struct tp_tracer *tr)
{
	unsigned i;

	if (tr->writing) {
		tr->buf = tp_tracer_writer_swap(&tr->w, tr->buf, tr->nr_buf);
		tr->nr_buf = 0;
		check_io(tr);
		return;
	}
	if (!tr->err)
		for (i = 0; i < tr->nr_buf; i++)
			tp_tracer_rec_write(tr->f, tr->t0, &tr->buf[i]);
	tr->nr_buf = 0;
	if (!tr->err)
		fflush(tr->f);
	check_io(tr);
}

static struct trace_rec *rec_new(struct tp_tracer *tr, char ph)
{
	struct trace_rec *r;

	if (tr->nr_buf == TRACE_BUF)
		flush(tr);
	r = &tr->buf[tr->nr_buf++];
	memset(r, 0, sizeof(*r));
	r->ph = ph;
	return r;
}

/* A counter sample now, when the memory in use changed. */
static void sample(struct tp_tracer *tr, uint64_t host_bytes)
{
	uint64_t dev = tr->vmm->stats.chunks_mapped * tr->vmm->granularity;
	uint64_t now = tp_vmm_now_ns(tr->vmm);
	struct trace_rec *r;

	if (tr->sampled && dev == tr->last_dev && host_bytes == tr->last_host)
		return;
	/* Counter samples must not go back in time. */
	if (now < tr->last_c_ts)
		now = tr->last_c_ts;
	r = rec_new(tr, 'C');
	r->ts = now;
	r->dev = dev;
	r->host = host_bytes;
	tr->last_dev = dev;
	tr->last_host = host_bytes;
	tr->last_c_ts = now;
	tr->sampled = true;
}

static int when(struct tp_tracer *tr, struct tp_event *ev, uint64_t *ns)
{
	uint64_t d;
	int ret = tp_vmm_event_elapsed_ns(tr->vmm, tr->epoch, ev, &d);

	if (!ret)
		*ns = tr->t0 + d;
	return ret;
}

/* The span at the head has completed: write it down and pop it. */
static void finish_head(struct tp_tracer *tr)
{
	struct trace_span *sp = &tr->span[tr->head];
	uint64_t start = 0, end = 0;
	struct trace_rec *r;

	if (!sp->dropped && !when(tr, sp->b, &end) &&
	    (!sp->op || !when(tr, sp->a, &start))) {
		/* Copies start when issued, or when the stream's previous
		 * work ended: a stream runs its work in order. */
		if (!sp->op)
			start = sp->issue_ns > tr->last_end[sp->s] ?
				sp->issue_ns : tr->last_end[sp->s];
		if (start > end)
			start = end;
		tr->last_end[sp->s] = end;
		r = rec_new(tr, 'X');
		r->s = sp->s;
		r->cat = sp->cat;
		memcpy(r->name, sp->name, sizeof(r->name));
		r->ts = start;
		r->dur = end - start;
		r->tensor = sp->tensor;
		r->bytes = sp->bytes;
		r->work = sp->work;
		r->has_work = sp->has_work;
	}
	tr->head = (tr->head + 1) % tr->cap;
	tr->count--;
}

/* Write down completed spans; @wait: every one, waiting for them. */
static void take_bg(struct tp_tracer *tr);

static void harvest(struct tp_tracer *tr, bool wait)
{
	take_bg(tr);
	while (tr->count) {
		struct trace_span *sp = &tr->span[tr->head];
		int ret;

		if (!sp->ended) {
			if (!wait)
				break;
			sp->dropped = true;	/* begun, never ended */
		} else if (!sp->dropped) {
			ret = wait ? tp_vmm_event_sync(tr->vmm, sp->b) :
				     tp_vmm_event_query(tr->vmm, sp->b);
			if (ret == -EAGAIN)
				break;
			if (ret)
				sp->dropped = true;
		}
		finish_head(tr);
	}
}

/*
 * Double the ring, oldest first, keeping the events of free slots too.
 * Waiting for the oldest span instead would make tracing change when
 * the caller's thread runs.
 */
static int grow(struct tp_tracer *tr)
{
	struct trace_span *n = calloc(2 * (size_t)tr->cap, sizeof(*n));
	unsigned i;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < tr->cap; i++)
		n[i] = tr->span[(tr->head + i) % tr->cap];
	free(tr->span);
	tr->span = n;
	tr->head = 0;
	tr->cap *= 2;
	return 0;
}

/* A fresh slot at the tail, its events created; NULL when none. */
static struct trace_span *span_new(struct tp_tracer *tr, bool op)
{
	struct trace_span *sp;

	harvest(tr, false);
	if (tr->count == tr->cap && grow(tr))
		return NULL;
	sp = &tr->span[(tr->head + tr->count) % tr->cap];
	if (!sp->b)
		sp->b = tp_vmm_event_create_timed(tr->vmm);
	if (op && !sp->a)
		sp->a = tp_vmm_event_create_timed(tr->vmm);
	if (!sp->b || (op && !sp->a))
		return NULL;
	sp->op = op;
	sp->ended = false;
	sp->dropped = false;
	sp->name[0] = '\0';
	sp->tensor = sp->bytes = sp->issue_ns = 0;
	sp->has_work = false;
	tr->count++;
	return sp;
}

/* A span of the host's, on track @tid, from @t0 to @t1 (host clock). */
static void host_span(struct tp_tracer *tr, int tid, const char *cat,
		      const char *name, uint64_t t0, uint64_t t1,
		      uint64_t units)
{
	struct trace_rec *r;

	if (!pthread_equal(pthread_self(), tr->owner) || t1 < tr->t0)
		return;
	r = rec_new(tr, 'X');
	r->tid = tid;
	r->cat = cat;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ts = t0 > tr->t0 ? t0 : tr->t0;
	r->dur = t1 - r->ts;
	r->units = units;
}

/* A driver call of the driver thread, from that thread: set aside. */
static void bg_span(struct tp_tracer *tr, enum tp_vmm_call k, uint64_t t0,
		    uint64_t t1, uint64_t units)
{
	struct trace_rec *r;

	pthread_mutex_lock(&tr->bg_lock);
	if (tr->nr_bg == tr->cap_bg) {
		unsigned cap = tr->cap_bg ? 2 * tr->cap_bg : 256;
		struct trace_rec *p = realloc(tr->bg, cap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&tr->bg_lock);
			return;
		}
		tr->bg = p;
		tr->cap_bg = cap;
	}
	r = &tr->bg[tr->nr_bg++];
	memset(r, 0, sizeof(*r));
	r->ph = 'X';
	r->tid = TID_DRIVER_BG;
	r->cat = "driver";
	snprintf(r->name, sizeof(r->name), "%s", call_name[k]);
	r->ts = t0 > tr->t0 ? t0 : tr->t0;
	r->dur = t1 > r->ts ? t1 - r->ts : 0;
	r->units = units;
	pthread_mutex_unlock(&tr->bg_lock);
}

/* The driver thread's calls set aside, into the records. Caller's thread. */
static void take_bg(struct tp_tracer *tr)
{
	pthread_mutex_lock(&tr->bg_lock);
	for (unsigned i = 0; i < tr->nr_bg; i++)
		*rec_new(tr, 'X') = tr->bg[i];
	tr->nr_bg = 0;
	pthread_mutex_unlock(&tr->bg_lock);
}

static void on_driver(void *priv, enum tp_vmm_call k, uint64_t t0,
		      uint64_t t1, uint64_t units, bool background)
{
	struct tp_tracer *tr = priv;

	if (!pthread_equal(pthread_self(), tr->owner))
		bg_span(tr, k, t0, t1, units);
	else
		host_span(tr, background ? TID_DRIVER_BG : TID_DRIVER,
			  "driver", call_name[k], t0, t1, units);
}

static void on_wait(void *priv, uint64_t t0, uint64_t t1, const char *why)
{
	/* A wait that did not wait is no news. */
	if (t1 > t0)
		host_span(priv, TID_WAITS, "wait", why ? why : "wait", t0, t1,
			  0);
}

/* The caller's thread waited for the maps the driver thread makes. */
static void on_gate(void *priv, enum tp_stream s, uint64_t t0, uint64_t t1)
{
	host_span(priv, TID_WAITS, "gate", "waits for maps made ahead", t0,
		  t1, 0);
}

void tp_tracer_issue(struct tp_tracer *tr, const char *name, uint64_t t0,
		     uint64_t t1)
{
	if (tr && t1 >= t0 + TRACE_ISSUE_MIN_NS)
		host_span(tr, TID_ISSUE, "issue", name, t0, t1, 0);
}

int tp_tracer_op_begin(struct tp_tracer *tr)
{
	struct trace_span *sp;

	if (!tr)
		return -1;
	sp = span_new(tr, true);
	if (!sp)
		return -1;
	sp->s = TP_STREAM_COMPUTE;
	if (tp_vmm_event_record(tr->vmm, sp->a, TP_STREAM_COMPUTE)) {
		sp->ended = true;
		sp->dropped = true;
		return -1;
	}
	return 0;
}

void tp_tracer_op_end(struct tp_tracer *tr, int span, const char *name,
		      bool recompute, bool ok, const struct tp_op_work *work)
{
	struct trace_span *sp;

	if (!tr || span < 0 || !tr->count)
		return;
	/* Nothing is traced during a launch: the op is the newest span. */
	sp = &tr->span[(tr->head + tr->count - 1) % tr->cap];
	if (!sp->op || sp->ended)
		return;
	sp->ended = true;
	if (!ok || tp_vmm_event_record(tr->vmm, sp->b, TP_STREAM_COMPUTE)) {
		sp->dropped = true;
		return;
	}
	sp->cat = recompute ? "recompute" : "op";
	snprintf(sp->name, sizeof(sp->name), recompute ? "%s (recompute)" : "%s",
		 name ? name : "op");
	sp->has_work = work != NULL;
	if (work)
		sp->work = *work;
	sample(tr, tr->last_host);
}

void tp_tracer_copy(struct tp_tracer *tr, enum tp_stream s, bool prefetch,
		    uint64_t tensor, uint64_t bytes, uint64_t issue_ns,
		    uint64_t host_bytes)
{
	struct trace_span *sp;

	if (!tr || s == TP_STREAM_COMPUTE || (unsigned)s >= TP_NR_STREAMS)
		return;
	sp = span_new(tr, false);
	if (!sp)
		return;
	sp->s = s;
	sp->ended = true;
	if (tp_vmm_event_record(tr->vmm, sp->b, s)) {
		sp->dropped = true;
		return;
	}
	sp->cat = s == TP_STREAM_D2H ? "offload" : prefetch ? "prefetch" : "reload";
	snprintf(sp->name, sizeof(sp->name), "%s", sp->cat);
	sp->tensor = tensor;
	sp->bytes = bytes;
	sp->issue_ns = issue_ns;
	sample(tr, host_bytes);
}

void tp_tracer_evict(struct tp_tracer *tr, uint64_t tensor, uint64_t bytes,
		     uint64_t host_bytes)
{
	struct trace_rec *r;

	if (!tr)
		return;
	r = rec_new(tr, 'i');
	r->s = TP_STREAM_COMPUTE;
	r->cat = "evict";
	snprintf(r->name, sizeof(r->name), "evict");
	r->ts = tp_vmm_now_ns(tr->vmm);
	r->tensor = tensor;
	r->bytes = bytes;
	sample(tr, host_bytes);
}

struct tp_tracer *tp_tracer_open(struct tp_vmm *vmm, const char *path)
{
	struct tp_tracer *tr = calloc(1, sizeof(*tr));
	int s, err = ENOMEM;

	if (!tr)
		goto err;
	tr->vmm = vmm;
	tr->path = strdup(path);
	tr->buf = calloc(TRACE_BUF, sizeof(*tr->buf));
	tr->cap = TRACE_SPANS;
	tr->span = calloc(tr->cap, sizeof(*tr->span));
	if (!tr->path || !tr->buf || !tr->span)
		goto err_free;
	tr->f = fopen(path, "w");
	if (!tr->f) {
		err = errno;
		tp_log(TP_LOG_ERROR, "stats.trace: cannot open %s: %s", path,
		       strerror(err));
		goto err_free;
	}
	/* The epoch: every span is timed against it. */
	tr->epoch = tp_vmm_event_create_timed(vmm);
	tr->t0 = tp_vmm_now_ns(vmm);
	if (!tr->epoch ||
	    (err = -tp_vmm_event_record(vmm, tr->epoch, TP_STREAM_COMPUTE)) ||
	    (err = -tp_vmm_event_sync(vmm, tr->epoch))) {
		err = err ? err : errno;
		tp_log(TP_LOG_ERROR, "stats.trace: cannot time events on the %s backend",
		       vmm->ops->name);
		goto err_close;
	}
	for (s = 0; s < TP_NR_STREAMS; s++)
		tr->last_end[s] = tr->t0;
	tp_tracer_json_begin(tr->f, vmm->ops->name, track_name, TID_ISSUE);
	pthread_mutex_init(&tr->bg_lock, NULL);
	check_io(tr);
	/* Without a thread of its own, the caller's thread writes. */
	tr->writing = !tp_tracer_writer_start(&tr->w, tr->f, tr->t0,
					      TRACE_BUF);
	sample(tr, 0);
	tr->owner = pthread_self();
	tr->obs = (struct tp_vmm_observer){
		.driver = on_driver, .wait = on_wait, .gate = on_gate,
		.priv = tr,
	};
	tp_vmm_observe(vmm, &tr->obs);
	return tr;

err_close:
	tp_vmm_event_put(vmm, tr->epoch);
	fclose(tr->f);
err_free:
	free(tr->span);
	free(tr->buf);
	free(tr->path);
	free(tr);
err:
	errno = err;
	return NULL;
}

int tp_tracer_close(struct tp_tracer *tr)
{
	unsigned i;
	int ret;

	if (!tr)
		return 0;
	/* After this the driver thread calls nothing of ours. */
	if (tr->vmm->obs == &tr->obs)
		tp_vmm_observe(tr->vmm, NULL);
	harvest(tr, true);
	take_bg(tr);
	if (tr->writing) {
		check_io(tr);
		tp_tracer_writer_stop(&tr->w);
		tr->writing = false;
	}
	flush(tr);
	if (!tr->err)
		fputs("\n]}\n", tr->f);
	check_io(tr);
	if (fclose(tr->f) && !tr->err) {
		tr->err = -errno;
		tp_log(TP_LOG_ERROR, "stats.trace: closing %s failed: %s",
		       tr->path, strerror(errno));
	}
	for (i = 0; i < tr->cap; i++) {
		tp_vmm_event_put(tr->vmm, tr->span[i].a);
		tp_vmm_event_put(tr->vmm, tr->span[i].b);
	}
	tp_vmm_event_put(tr->vmm, tr->epoch);
	ret = tr->err;
	free(tr->span);
	free(tr->buf);
	free(tr->bg);
	pthread_mutex_destroy(&tr->bg_lock);
	free(tr->path);
	free(tr);
	return ret;
}
