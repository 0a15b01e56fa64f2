// SPDX-License-Identifier: MIT
/*
 * Parse speed of the trace readers at the scale of real logs: a DTR log
 * (default: the Transformer log beside the project) is repeated with its
 * names renamed until it is about 10 MB, then parsed as DTR JSON lines, and
 * its tpager-trace(5) rendering parsed as text. Prints one table row per
 * format: size, records, best time of 5, records/s, MB/s, and the peak.
 *
 *   bench/trace-parse [LOG.gz|LOG] [TARGET_MB]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/trace.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The log, gzip or not, as the loader reads it. */
static char *read_log(const char *path, size_t *len)
{
	struct tp_trace_error err;
	char *buf, msg[512];

	if (tp_trace_read_file(path, &buf, len, &err)) {
		fprintf(stderr, "%s\n",
			tp_trace_error_str(&err, msg, sizeof(msg)));
		return NULL;
	}
	return buf;
}

/* @copies copies of @log, the names of copy k prefixed with "k_". */
static char *repeat(const char *log, size_t len, unsigned copies,
		    size_t *out_len)
{
	char *buf = malloc(copies * (len + len / 4) + 1), *d = buf;

	if (!buf)
		return NULL;
	for (unsigned k = 0; k < copies; k++) {
		for (size_t i = 0; i < len; i++) {
			*d++ = log[i];
			/* A name is a string value starting with x and a digit. */
			if (log[i] == '"' && i + 2 < len && log[i + 1] == 'x' &&
			    log[i + 2] >= '0' && log[i + 2] <= '9')
				d += sprintf(d, "%u_", k);
		}
	}
	*out_len = (size_t)(d - buf);
	return buf;
}

static void row(const char *fmt, const char *buf, size_t len, bool dtr)
{
	struct tp_trace_summary s;
	struct tp_trace_error err;
	struct tp_trace *t = NULL;
	double best = 1e9;
	uint64_t records = 0;

	for (int i = 0; i < 5; i++) {
		double t0 = now();
		int rc = dtr ? tp_trace_parse_dtr(buf, len, fmt, &t, &err) :
			       tp_trace_parse(buf, len, fmt, &t, &err);

		t0 = now() - t0;
		if (rc) {
			fprintf(stderr, "%s:%lu: %s\n", err.file, err.line,
				err.reason);
			exit(1);
		}
		if (t0 < best)
			best = t0;
		records = t->records;
		if (i < 4)
			tp_trace_free(t);
	}
	tp_trace_peak(t, &s);
	printf("%-6s %9.2f %9llu %9zu %9.1f %9.2f %9.0f %14llu\n", fmt,
	       len / 1e6, (unsigned long long)records, t->n_ops, best * 1e3,
	       records / best / 1e6, len / best / 1e6,
	       (unsigned long long)s.peak_bytes);
	tp_trace_free(t);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] :
		"../shared/traces/dtr/transformer-10-8000000000.0-2020-10-1-10-56-5-default.log.gz";
	double target = argc > 2 ? atof(argv[2]) : 10;
	struct tp_trace_error err;
	struct tp_trace *t = NULL;
	size_t len, big_len, text_len = 0;
	char *log, *big, *text = NULL;
	unsigned copies;
	FILE *f;

	log = read_log(path, &len);
	if (!log || !len) {
		fprintf(stderr, "cannot read %s\n", path);
		return 1;
	}
	copies = (unsigned)(target * 1e6 / len + 0.999);
	if (!copies)
		copies = 1;
	big = repeat(log, len, copies, &big_len);
	if (!big || tp_trace_parse_dtr(big, big_len, "big", &t, &err)) {
		fprintf(stderr, "big:%lu: %s\n", err.line, err.reason);
		return 1;
	}
	f = open_memstream(&text, &text_len);
	if (!f || tp_trace_write(t, f))
		return 1;
	fclose(f);
	tp_trace_free(t);

	printf("# %s x %u\n", path, copies);
	printf("%-6s %9s %9s %9s %9s %9s %9s %14s\n", "format", "MB",
	       "records", "ops", "ms", "Mrec/s", "MB/s", "peak B");
	row("dtr", big, big_len, true);
	row("text", text, text_len, false);
	free(log);
	free(big);
	free(text);
	return 0;
}
