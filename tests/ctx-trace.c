/* SPDX-License-Identifier: MIT */
/*
 * stats.trace: a small workload on host and sim writes a trace that is
 * valid JSON in the Chrome trace format, with one event per op run,
 * recompute, offload, reload, prefetch and eviction (counted against the
 * statistics), counter samples whose times never go back, and every
 * reload after the offload it reads. On the sim's h200 profile, where
 * the driver thread makes the maps, the device's waits for them are
 * spans on the stream that waited. An unwritable file fails
 * tp_ctx_create.
 *
 * One file, past the usual length: one Perfetto trace read back and
 * checked track by track, over the same parse helpers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "tpager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "vmm/backend_host.h"

#define CHECKS 17
#define HELD 300u	/* offloads held in flight: more than the first ring */
#define SIZE (256u << 10)
/* Ops beyond the buffer of records and the spans in flight: written in
 * several batches. */
#define LOOP 5000u

/* --- a minimal JSON reader: enough to check structure and read events */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jt t;
	double num;
	char *str;
	struct jv **items;	/* array items, or object values */
	char **keys;		/* object keys */
	size_t n;
};

struct jp {
	const char *s;
	int err;
};

static void ws(struct jp *p)
{
	while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
		p->s++;
}

static struct jv *jv_new(enum jt t)
{
	struct jv *v = calloc(1, sizeof(*v));

	if (!v)
		abort();
	v->t = t;
	return v;
}

static char *parse_str(struct jp *p)
{
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	if (*p->s != '"') {
		p->err = 1;
		free(out);
		return NULL;
	}
	p->s++;
	while (*p->s && *p->s != '"') {
		char c = *p->s++;

		if ((unsigned char)c < 0x20) {
			p->err = 1;
			break;
		}
		if (c == '\\') {
			c = *p->s++;
			if (c == 'u') {
				unsigned k;

				for (k = 0; k < 4; k++)
					if (!strchr("0123456789abcdefABCDEF", p->s[k]) || !p->s[k])
						p->err = 1;
				if (p->err)
					break;
				p->s += 4;
				c = '?';
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				p->err = 1;
				break;
			}
		}
		if (n + 2 > cap)
			out = realloc(out, cap *= 2);
		out[n++] = c;
	}
	if (*p->s != '"')
		p->err = 1;
	else
		p->s++;
	out[n] = '\0';
	return out;
}

static struct jv *parse(struct jp *p);

static void push(struct jv *v, struct jv *item, char *key)
{
	v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
	v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
	v->items[v->n] = item;
	v->keys[v->n++] = key;
}

static struct jv *parse(struct jp *p)
{
	struct jv *v;
	char *end;

	ws(p);
	if (p->err)
		return NULL;
	if (*p->s == '{' || *p->s == '[') {
		bool obj = *p->s == '{';

		v = jv_new(obj ? J_OBJ : J_ARR);
		p->s++;
		ws(p);
		if (*p->s == (obj ? '}' : ']')) {
			p->s++;
			return v;
		}
		for (;;) {
			char *key = NULL;

			ws(p);
			if (obj) {
				key = parse_str(p);
				ws(p);
				if (*p->s++ != ':')
					p->err = 1;
			}
			push(v, parse(p), key);
			if (p->err)
				return v;
			ws(p);
			if (*p->s == ',') {
				p->s++;
				continue;
			}
			if (*p->s++ != (obj ? '}' : ']'))
				p->err = 1;
			return v;
		}
	}
	if (*p->s == '"') {
		v = jv_new(J_STR);
		v->str = parse_str(p);
		return v;
	}
	if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "null", 4)) {
		p->s += 4;
		return jv_new(J_BOOL);
	}
	if (!strncmp(p->s, "false", 5)) {
		p->s += 5;
		return jv_new(J_BOOL);
	}
	v = jv_new(J_NUM);
	v->num = strtod(p->s, &end);
	if (end == p->s)
		p->err = 1;
	p->s = end;
	return v;
}

static void jv_free(struct jv *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		jv_free(v->items[i]);
		free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static struct jv *get(const struct jv *o, const char *key)
{
	size_t i;

	if (!o || o->t != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (o->keys[i] && !strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

static const char *sget(const struct jv *o, const char *key)
{
	const struct jv *v = get(o, key);

	return v && v->t == J_STR ? v->str : "";
}

static double nget(const struct jv *o, const char *key)
{
	const struct jv *v = get(o, key);

	return v && v->t == J_NUM ? v->num : -1;
}

static char *slurp(const char *path);

static struct jv *load(const char *path)
{
	char *text = slurp(path);
	struct jv *root = NULL;
	struct jp p = { text, 0 };

	if (text) {
		root = parse(&p);
		ws(&p);
		if (p.err || *p.s) {
			jv_free(root);
			root = NULL;
		}
	}
	free(text);
	return root;
}

/*
 * A stream runs its work in order: on each track, spans sorted by start
 * do not overlap (within the 1 ns the µs figures are rounded to).
 */
static int by_ts(const void *a, const void *b)
{
	double x = nget(*(const struct jv *const *)a, "ts");
	double y = nget(*(const struct jv *const *)b, "ts");

	return x < y ? -1 : x > y;
}

static unsigned overlaps(const struct jv *evs)
{
	const struct jv **track = calloc(evs->n + 1, sizeof(*track));
	unsigned bad = 0, tid;
	size_t i, n;

	if (!track)
		bail_out("memory");
	for (tid = 1; tid <= 3; tid++) {
		double end = -1;

		/* Ops in completion order, the device's waits as issued. */
		for (i = n = 0; i < evs->n; i++) {
			const struct jv *e = evs->items[i];

			if (!strcmp(sget(e, "ph"), "X") && nget(e, "tid") == tid)
				track[n++] = e;
		}
		qsort(track, n, sizeof(*track), by_ts);
		for (i = 0; i < n; i++) {
			if (nget(track[i], "ts") < end - 1e-3)
				bad++;
			end = nget(track[i], "ts") + nget(track[i], "dur");
		}
	}
	free(track);
	return bad;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0, cap = 1 << 16;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (!feof(f) && !ferror(f)) {
		if (n + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		n += fread(buf + n, 1, cap - n - 1, f);
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* --- the workload --------------------------------------------------------- */

static struct tp_tensor *op(struct tp_ctx *ctx, struct tp_tensor *in)
{
	struct tp_tensor *out = NULL;
	size_t bytes = SIZE;

	if (tp_op_run(ctx, &tops_softsign, NULL, 0, &in, 1, &out, &bytes, 1))
		return NULL;
	return out;
}

static int touch(struct tp_ctx *ctx, struct tp_tensor *t)
{
	if (!tp_tensor_acquire(ctx, t, TP_READ))
		return -errno;
	return tp_tensor_release(ctx, t);
}

static void run(const char *backend, const char *path)
{
	struct tp_tensor *a, *b = NULL, *c = NULL, *d = NULL;
	struct tp_stats st;
	char opts[512];
	struct tp_ctx *ctx;
	char *text;
	struct jv *root = NULL, *evs;
	struct jp p;
	size_t i, j;
	int ret = 0;
	unsigned first = 0, recomp = 0, off = 0, rel = 0, pre = 0, ev = 0;
	unsigned tracks = 0, bad_tid = 0, counters = 0, back = 0, unmatched = 0;
	unsigned driver = 0, known = 0, pins = 0, waits = 0, unnamed = 0;
	unsigned synced = 0;
	double last_c = -1, max_dev = 0;
	bool both = true;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=%s,pager.rescue=0,vmm.chunk_size=64K,pager.budget=16M,pager.slab_fraction=0,stats.trace=%s",
		 backend, path);
	ctx = tp_ctx_create(opts);
	ok(ctx != NULL, "%s: context with stats.trace=%s", backend, path);
	if (!ctx) {
		skip(CHECKS - 1, "%s: no context", backend);
		return;
	}
	a = tp_tensor_create(ctx, SIZE, TP_UNCOMPUTABLE);
	if (a && !strcmp(backend, "host")) {
		char *buf = calloc(1, SIZE);

		ret = tp_tensor_write(ctx, a, 0, buf, SIZE);
		free(buf);
	} else if (a) {
		ret = tp_tensor_write(ctx, a, 0, NULL, 0);
		ret = touch(ctx, a);
	}
	b = a && !ret ? op(ctx, a) : NULL;
	c = b ? op(ctx, b) : NULL;
	d = c ? op(ctx, c) : NULL;
	ret = d ? 0 : -1;
	ret = ret ?: tp_tensor_offload(ctx, a);
	ret = ret ?: touch(ctx, a);
	ret = ret ?: tp_tensor_evict(ctx, c);
	ret = ret ?: touch(ctx, c);
	ret = ret ?: tp_tensor_offload(ctx, b);
	ret = ret ?: tp_tensor_prefetch(ctx, b);
	ret = ret ?: tp_sync(ctx);
	ret = ret ?: touch(ctx, b);
	for (i = 0; i < LOOP && !ret; i++) {
		struct tp_tensor *x = op(ctx, d);

		ret = x ? tp_tensor_free(ctx, x) : -1;
	}
	ret = ret ?: tp_stats_get(ctx, &st);
	ok(!ret, "%s: 3 ops, offload, reload, evict, recompute, prefetch, %u more ops (%d)",
	   backend, LOOP, ret);
	tp_ctx_destroy(ctx);

	text = slurp(path);
	if (text) {
		p.s = text;
		p.err = 0;
		root = parse(&p);
		ws(&p);
		if (*p.s)
			p.err = 1;
	}
	evs = get(root, "traceEvents");
	ok(text && !p.err && root && root->t == J_OBJ && evs && evs->t == J_ARR,
	   "%s: the trace is one JSON object with a traceEvents array (%zu events)",
	   backend, evs ? evs->n : 0);
	if (!evs || evs->t != J_ARR) {
		skip(CHECKS - 3, "%s: no events to check", backend);
		goto out;
	}
	for (i = 0; i < evs->n; i++) {
		const struct jv *e = evs->items[i];
		const char *ph = sget(e, "ph"), *name = sget(e, "name");
		const char *cat = sget(e, "cat");
		double tid = nget(e, "tid"), ts = nget(e, "ts");
		const struct jv *args = get(e, "args");

		if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
			const char *tn = sget(args, "name");

			tracks += (tid == 1 && !strcmp(tn, "compute")) ||
				  (tid == 2 && !strcmp(tn, "d2h")) ||
				  (tid == 3 && !strcmp(tn, "h2d")) ||
				  (tid == 4 && !strcmp(tn, "host: driver calls")) ||
				  (tid == 5 &&
				   !strcmp(tn, "host: waits on the device")) ||
				  (tid == 6 && !strcmp(tn, "host: driver thread")) ||
				  (tid == 7 &&
				   !strcmp(tn, "host: ops issued (over 100 us)"));
		} else if (!strcmp(ph, "X")) {
			double want = !strcmp(cat, "offload") ? 2 :
				      !strcmp(cat, "reload") ||
				      !strcmp(cat, "prefetch") ? 3 :
				      !strcmp(cat, "driver") ? 4 :
				      !strcmp(cat, "wait") ? 5 :
				      !strcmp(cat, "issue") ? 7 : 1;

			/* the driver thread's calls have a track of their own */
			if (want == 4 && tid == 6)
				want = 6;
			if (tid != want || ts < 0 || nget(e, "dur") < 0)
				bad_tid++;
			if (!strcmp(cat, "driver") &&
			    !strcmp(name, "pin host memory")) {
				/* host swap: not among stats.driver_calls */
				pins++;
			} else if (!strcmp(cat, "driver")) {
				driver++;
				known += !strcmp(name, "map") ||
					 !strcmp(name, "set access") ||
					 !strcmp(name, "unmap") ||
					 !strcmp(name, "reserve") ||
					 !strcmp(name, "release range") ||
					 !strcmp(name, "create handle") ||
					 !strcmp(name, "release handle");
			}
			if (!strcmp(cat, "wait")) {
				waits++;
				unnamed += !strcmp(name, "wait");
				synced += !strcmp(name, "tp_sync");
			}
			first += !strcmp(cat, "op") && !strcmp(name, "softsign");
			recomp += !strcmp(cat, "recompute") &&
				  !strcmp(name, "softsign (recompute)");
			off += !strcmp(cat, "offload");
			rel += !strcmp(cat, "reload");
			pre += !strcmp(cat, "prefetch");
		} else if (!strcmp(ph, "i")) {
			ev += !strcmp(name, "evict");
		} else if (!strcmp(ph, "C")) {
			double dv = nget(args, "device_bytes");

			counters++;
			if (ts < last_c)
				back++;
			last_c = ts;
			if (dv < 0 || nget(args, "host_swap_bytes") < 0)
				both = false;
			if (dv > max_dev)
				max_dev = dv;
		}
	}
	/* Every reload reads what an earlier offload of that tensor wrote. */
	for (i = 0; i < evs->n; i++) {
		const struct jv *e = evs->items[i];
		const char *cat = sget(e, "cat");
		bool found = false;

		if (strcmp(sget(e, "ph"), "X") ||
		    (strcmp(cat, "reload") && strcmp(cat, "prefetch")))
			continue;
		for (j = 0; j < evs->n; j++) {
			const struct jv *o = evs->items[j];

			if (!strcmp(sget(o, "ph"), "X") &&
			    !strcmp(sget(o, "cat"), "offload") &&
			    nget(get(o, "args"), "tensor") ==
			    nget(get(e, "args"), "tensor") &&
			    nget(o, "ts") + nget(o, "dur") <= nget(e, "ts") + 1e-3)
				found = true;
		}
		unmatched += !found;
	}
	ok(tracks == 7, "%s: tracks compute, d2h, h2d, driver calls, waits, driver thread, ops issued named on tids 1-7 (%u)",
	   backend, tracks);
	ok(driver > 0 && known == driver && driver <= st.driver_calls,
	   "%s: %u driver calls on their track, each named by its kind, of %llu made (and %u of host memory)",
	   backend, driver, (unsigned long long)st.driver_calls, pins);
	ok(!bad_tid, "%s: every span on its stream's track, ts and dur >= 0 (%u bad)",
	   backend, bad_tid);
	ok(first == 3 + LOOP, "%s: %u first runs named softsign (%u)", backend,
	   3 + LOOP, first);
	ok(recomp == st.recomputes && recomp >= 1,
	   "%s: recomputes named \"softsign (recompute)\": %u, stats %llu",
	   backend, recomp, (unsigned long long)st.recomputes);
	ok(off == st.offloads && off == 2, "%s: offloads: %u, stats %llu",
	   backend, off, (unsigned long long)st.offloads);
	ok(rel + pre == st.reloads && rel >= 1,
	   "%s: reloads %u + prefetches %u = stats %llu", backend, rel, pre,
	   (unsigned long long)st.reloads);
	ok(pre == st.prefetch_issued && pre == 1,
	   "%s: prefetches: %u, stats %llu", backend, pre,
	   (unsigned long long)st.prefetch_issued);
	ok(ev == st.evictions && ev == 1, "%s: evictions as instants: %u, stats %llu",
	   backend, ev, (unsigned long long)st.evictions);
	ok(counters >= 3 && both && !back,
	   "%s: %u counter samples of device and host swap bytes, never back in time (%u back)",
	   backend, counters, back);
	ok(max_dev >= 3.0 * SIZE && max_dev <= 16.0 * 1048576,
	   "%s: device bytes peak at %.0f, within the budget", backend, max_dev);
	ok(!unmatched, "%s: every reload after its tensor's offload ended (%u not)",
	   backend, unmatched);
	ok(!overlaps(evs), "%s: spans on one track never overlap (%u do)",
	   backend, overlaps(evs));
	ok(!unnamed && (synced || !strcmp(backend, "host")),
	   "%s: every wait named by what it waits for, tp_sync's among them on sim (%u waits, %u unnamed, %u tp_sync)",
	   backend, waits, unnamed, synced);
out:
	jv_free(root);
	free(text);
}

static char logged[512];

static void log_fn(enum tp_log_level level, const char *msg, void *priv)
{
	if (level == TP_LOG_ERROR && strstr(msg, "stats.trace"))
		snprintf(logged, sizeof(logged), "%s", msg);
}

/*
 * Offloads held in flight (the host's d2h engine gated) beyond the spans
 * the tracer first keeps: none is lost, and none was waited for while
 * the gate was closed (they all complete after it opens).
 */
static void many_in_flight(const char *path)
{
	struct tp_tensor *t[HELD];
	struct tp_ctx *ctx;
	struct jv *root, *evs;
	unsigned i, n = 0, made = 0, held_ok = 0;
	char opts[256];
	char buf[4096] = { 1 };
	int ret = 0;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=64M,pager.slab_fraction=0,stats.trace=%s",
		 path);
	ctx = tp_ctx_create(opts);
	if (!ctx) {
		skip(1, "no host context");
		return;
	}
	for (i = 0; i < HELD; i++) {
		t[i] = tp_tensor_create(ctx, 64 << 10, TP_UNCOMPUTABLE);
		if (!t[i] || tp_tensor_write(ctx, t[i], 0, buf, sizeof(buf)))
			break;
		made++;
	}
	ret = tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	for (i = 0; i < made && !ret; i++)
		ret = tp_tensor_offload(ctx, t[i]);
	/* Every copy is still held: the tracer has not waited for any. */
	held_ok = !ret;
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, false);
	ret = ret ?: tp_sync(ctx);
	tp_ctx_destroy(ctx);
	root = load(path);
	evs = get(root, "traceEvents");
	for (i = 0; evs && i < evs->n; i++)
		n += !strcmp(sget(evs->items[i], "cat"), "offload");
	ok(made == HELD && held_ok && !ret && n == HELD && !overlaps(evs),
	   "%u offloads held in flight at once: %u traced, in order", HELD, n);
	jv_free(root);
}

/*
 * Maps made ahead (sim, h200 profile): each op's output is mapped by the
 * driver thread and the caller waits for it before the launch, a span
 * named for it on the track of the caller's waits, no more than the
 * waits counted.
 */
static void gates(const char *path)
{
	struct tp_tensor *a, *x = NULL;
	struct tp_stats st;
	struct tp_ctx *ctx;
	struct jv *root, *evs;
	unsigned i, n = 0, bad = 0;
	char opts[256];
	int ret;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.sim.profile=h200,pager.budget=64M,pager.slab_fraction=0,stats.trace=%s",
		 path);
	ctx = tp_ctx_create(opts);
	if (!ctx) {
		skip(1, "no sim context");
		return;
	}
	a = tp_tensor_create(ctx, SIZE, TP_UNCOMPUTABLE);
	ret = a ? touch(ctx, a) : -1;
	for (i = 0; i < 8 && !ret; i++) {
		x = op(ctx, a);
		ret = x ? tp_tensor_free(ctx, x) : -1;
	}
	ret = ret ?: tp_sync(ctx);
	ret = ret ?: tp_stats_get(ctx, &st);
	tp_ctx_destroy(ctx);
	root = load(path);
	evs = get(root, "traceEvents");
	for (i = 0; evs && i < evs->n; i++) {
		const struct jv *e = evs->items[i];

		if (strcmp(sget(e, "cat"), "gate"))
			continue;
		n++;
		bad += strcmp(sget(e, "ph"), "X") ||
		       nget(e, "tid") != TP_NR_STREAMS + 2 ||
		       !(nget(e, "dur") > 0) ||
		       strcmp(sget(e, "name"), "waits for maps made ahead");
	}
	ok(!ret && st.maps_ahead > 0 && n > 0 && n <= st.gate_waits && !bad &&
	   evs && !overlaps(evs),
	   "sim h200: %u waits for maps made ahead on the track of the caller's waits (%llu waits, %llu maps ahead, %u bad), none over an op",
	   n, (unsigned long long)st.gate_waits,
	   (unsigned long long)st.maps_ahead, bad);
	jv_free(root);
}

/* An op whose launch keeps the issuing thread 300 us (host backend). */
static int slow_launch(const struct tp_op_launch *l)
{
	memcpy(l->out[0], l->in[0], l->in_bytes[0]);
	usleep(300);
	return 0;
}

static const struct tp_op_type slow_op = {
	.name = "slow", .launch = slow_launch,
};

/*
 * The issuing thread's time in an op is a span on its own track when it
 * reaches 100 us: each of the slow ops' (named for its type, at least
 * the 300 us it slept), none under 100 us.
 */
static void issued(const char *path)
{
	struct tp_tensor *a, *x;
	struct jv *root, *evs;
	struct tp_ctx *ctx;
	size_t bytes = 4096;
	unsigned i, slow = 0, other = 0, bad = 0;
	char opts[256];
	int ret = 0;

	snprintf(opts, sizeof(opts), "vmm.backend=host,stats.trace=%s", path);
	ctx = tp_ctx_create(opts);
	a = ctx ? tp_tensor_create(ctx, bytes, TP_UNCOMPUTABLE) : NULL;
	ret = a ? touch(ctx, a) : -1;
	for (i = 0; i < 6 && !ret; i++) {
		x = NULL;
		ret = tp_op_run(ctx, i % 2 ? &tops_softsign : &slow_op, NULL, 0,
				&a, 1, &x, &bytes, 1) ?: tp_tensor_free(ctx, x);
	}
	tp_ctx_destroy(ctx);
	root = load(path);
	evs = get(root, "traceEvents");
	for (i = 0; evs && i < evs->n; i++) {
		const struct jv *e = evs->items[i];

		if (strcmp(sget(e, "cat"), "issue"))
			continue;
		if (!strcmp(sget(e, "name"), "slow"))
			slow++;
		else
			other++;
		bad += nget(e, "tid") != TP_NR_STREAMS + 4 ||
		       nget(e, "dur") < 100 ||
		       (!strcmp(sget(e, "name"), "slow") &&
			nget(e, "dur") < 300);
	}
	/* a quick one may take 100 us on a loaded machine: not counted */
	ok(a && !ret && slow == 3 && !bad,
	   "host: each op that kept the issuing thread 300 us is a span on the ops-issued track (%u of 3; %u others), none under 100 us or misplaced (%u)",
	   slow, other, bad);
	jv_free(root);
}

/* A device that refuses every write: the error reaches the log. */
static void write_error(void)
{
	struct tp_ctx *ctx;
	struct tp_tensor *a, *x = NULL;
	unsigned i;

	if (access("/dev/full", W_OK)) {
		skip(1, "no /dev/full");
		return;
	}
	tp_set_log(log_fn, NULL);
	ctx = tp_ctx_create("vmm.backend=sim,pager.rescue=0,vmm.chunk_size=64K,pager.slab_fraction=0,stats.trace=/dev/full");
	a = ctx ? tp_tensor_create(ctx, SIZE, TP_UNCOMPUTABLE) : NULL;
	if (a && !touch(ctx, a))
		for (i = 0; i < LOOP; i++) {
			x = op(ctx, a);
			if (!x || tp_tensor_free(ctx, x))
				break;
		}
	tp_ctx_destroy(ctx);
	tp_set_log(NULL, NULL);
	ok(ctx && x && strstr(logged, "writing /dev/full failed"),
	   "a write error is reported through the log: \"%s\"", logged);
}

int main(void)
{
	char path[] = "/tmp/tpager-trace-XXXXXX";
	char bad[600];
	struct tp_ctx *ctx;
	int fd;

	plan_tests(2 * CHECKS + 5);
	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	run("host", path);
	run("sim", path);
	many_in_flight(path);
	gates(path);
	issued(path);
	if (!getenv("TPAGER_TEST_KEEP_TRACE"))
		unlink(path);

	snprintf(bad, sizeof(bad),
		 "vmm.backend=host,pager.rescue=0,stats.trace=%s.missing-dir/trace.json", path);
	errno = 0;
	ctx = tp_ctx_create(bad);
	ok(!ctx && errno == ENOENT,
	   "an unwritable stats.trace fails tp_ctx_create (errno %d)", errno);
	tp_ctx_destroy(ctx);
	write_error();
	return exit_status();
}
