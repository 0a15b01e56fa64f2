// SPDX-License-Identifier: MIT
/*
 * The two DTR logs shipped beside the project (ResNet-32 batch 56 and the
 * Transformer batch 10, ../shared/traces/dtr/) import with the numbers
 * established for them, the same ones every time, and survive a trip
 * through tpager-trace(5) text unchanged. Parse speed is reported.
 *
 * The logs are read through tp_trace_read_file() (zlib). Their
 * directory is $TP_DTR_LOGS, else $top_srcdir/../shared/traces/dtr.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace.h"
#include "tests/tap.h"

static const struct expect {
	const char *file;
	uint64_t records, ops, tensors, storages, events;
	uint64_t peak_bytes, compute_ns, start_bytes, end_bytes;
} logs[] = {
	{ "resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log.gz",
	  3777, 286, 696, 680, 925,
	  10061179152ull, 291905487ull, 0, 3722568 },
	{ "transformer-10-8000000000.0-2020-10-1-10-56-5-default.log.gz",
	  18638, 2821, 3457, 1814, 6012,
	  9864405000ull, 276259118ull, 0, 504438784 },
};
#define N_LOGS (sizeof(logs) / sizeof(logs[0]))
#define TESTS_PER_LOG 10

/* The log, decompressed by the loader's own zlib path. */
static char *read_log(const char *path, size_t *len)
{
	struct tp_trace_error err;
	char *buf, msg[512];

	if (tp_trace_read_file(path, &buf, len, &err))
		bail_out("%s", tp_trace_error_str(&err, msg, sizeof(msg)));
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check_log(const char *dir, const struct expect *e)
{
	struct tp_trace *t = NULL, *t2 = NULL, *t3 = NULL;
	struct tp_trace_summary s, s3;
	struct tp_trace_error err;
	char path[4400], *buf, *text = NULL;
	size_t len, text_len = 0;
	double t0, best = 1e9;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%.4000s/%.300s", dir, e->file);
	buf = read_log(path, &len);
	ok(tp_trace_detect(buf, len) == TP_TRACE_FMT_DTR, "%s: detected as DTR",
	   e->file);
	rc = tp_trace_parse_dtr(buf, len, e->file, &t, &err);
	if (!ok_rc(rc, "%s parses", e->file)) {
		diag("%s:%lu: %s", err.file, err.line, err.reason);
		skip(TESTS_PER_LOG - 2, "did not parse");
		free(buf);
		return;
	}
	ok(t->records == e->records && t->n_ops == e->ops &&
	   t->n_tensors == e->tensors && t->n_storages == e->storages &&
	   t->n_events == e->events,
	   "records %llu, ops %zu, tensors %zu, storages %zu, events %zu",
	   (unsigned long long)t->records, t->n_ops, t->n_tensors,
	   t->n_storages, t->n_events);
	ok(t->measured && t->iterations == 1,
	   "one START: one measured iteration");
	ok_rc(tp_trace_peak(t, &s), "accounting runs");
	ok(s.peak_bytes == e->peak_bytes && s.compute_ns == e->compute_ns &&
	   s.start_bytes == e->start_bytes && s.end_bytes == e->end_bytes &&
	   s.region_ops == e->ops,
	   "peak %llu B, compute %llu ns, live at start %llu, at end %llu",
	   (unsigned long long)s.peak_bytes, (unsigned long long)s.compute_ns,
	   (unsigned long long)s.start_bytes, (unsigned long long)s.end_bytes);

	rc = tp_trace_parse_dtr(buf, len, e->file, &t2, &err);
	ok(!rc && tp_trace_equal(t, t2), "parsing twice gives the same trace");

	f = open_memstream(&text, &text_len);
	if (!f)
		bail_out("open_memstream");
	rc = tp_trace_write(t, f);
	fclose(f);
	ok_rc(rc, "written as text (%zu bytes)", text_len);
	rc = tp_trace_parse(text, text_len, "text", &t3, &err);
	ok(!rc && tp_trace_equal(t, t3), "the text parses to an equal trace");
	ok(!rc && !tp_trace_peak(t3, &s3) &&
	   !memcmp(&s, &s3, sizeof(s)), "with the same accounting");

	/* Speed: best of five parses. */
	for (int i = 0; i < 5; i++) {
		struct tp_trace *x = NULL;

		t0 = now();
		rc = tp_trace_parse_dtr(buf, len, e->file, &x, &err);
		t0 = now() - t0;
		if (t0 < best)
			best = t0;
		tp_trace_free(x);
	}
	diag("%s: %zu bytes, %llu records in %.2f ms: %.2f M records/s, %.0f MB/s",
	     e->file, len, (unsigned long long)t->records, best * 1e3,
	     t->records / best / 1e6, len / best / 1e6);
	diag("  ops %zu, storages %zu, peak %llu B, compute %.3f ms",
	     t->n_ops, t->n_storages, (unsigned long long)s.peak_bytes,
	     s.compute_ns / 1e6);

	tp_trace_free(t);
	tp_trace_free(t2);
	tp_trace_free(t3);
	free(text);
	free(buf);
}

int main(void)
{
	const char *dir = getenv("TP_DTR_LOGS");
	char def[4096];
	char probe[4200];

	if (!dir) {
		const char *top = getenv("top_srcdir");

		snprintf(def, sizeof(def), "%s/../shared/traces/dtr",
			 top ? top : "..");
		dir = def;
	}
	snprintf(probe, sizeof(probe), "%.4000s/%.190s", dir, logs[0].file);
	if (access(probe, R_OK))
		plan_skip_all("no DTR logs in %s (set TP_DTR_LOGS)", dir);
	plan_tests(N_LOGS * TESTS_PER_LOG);
	for (size_t i = 0; i < N_LOGS; i++)
		check_log(dir, &logs[i]);
	return exit_status();
}
