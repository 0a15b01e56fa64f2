// SPDX-License-Identifier: MIT
/*
 * bench/policy-table: replay DTR's recorded logs through the library on
 * the sim backend under budget ratios of their unconstrained peak, with
 * each policy, and print the overhead tables of dtr-log-format.md beside
 * DTR's own reference figures.
 *
 *   policy-table [--chunk-size B] [LOG...]
 *
 * Without LOG arguments it reads the logs in $top_srcdir/../shared/traces/dtr
 * (or ../shared/traces/dtr, ../../shared/traces/dtr from the current
 * directory).
 *
 * Table 1, recompute only, DTR's semantics: remap cost 0, no offload, no
 * prefetch, eviction on demand (watermarks at 100 %), runs stopped past
 * an overhead of 2.0 ("thr"). Overhead = (compute + recompute) / compute.
 *
 * Table 2, beyond DTR: offload over a 12 GB/s link (the PCIe 3.0 of the
 * recording machine) and prefetch, with the library's watermarks. DTR's
 * overhead counts recompute only, so each cell also gives the time
 * overhead (virtual time against the unconstrained replay), which counts
 * waiting on copies too.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/replay.h"

static const double ratios[] = { 0.2, 0.3, 0.5, 0.7, 0.9 };
#define NR_RATIOS (sizeof(ratios) / sizeof(ratios[0]))

struct policy {
	const char *filter, *director;
};

static const struct policy recompute_only[] = {
	{ "dtr", "evict" }, { "lru", "evict" }, { "greedy", "evict" },
	{ "msps", "evict" }, { "delta", "evict" },
};

static const struct policy with_offload[] = {
	{ "dtr", "evict" }, { "delta", "offload" }, { "delta", "delta" },
	{ "delta", "delta-overlap" }, { "dtr", "delta-overlap" },
};

/* DTR's simulator, h_DTR (dtr-log-format.md); 0: not given. */
static const struct {
	const char *prefix;
	double h[NR_RATIOS];
} reference[] = {
	{ "resnet32", { 1.37, 1.18, 1.11, 1.05, 1.01 } },
	{ "transformer", { 1.35, 1.12, 1.06, 1.03, 1.01 } },
};

static uint64_t chunk_size;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void print_reference(const char *path)
{
	for (size_t i = 0; i < sizeof(reference) / sizeof(reference[0]); i++) {
		if (strncmp(base_name(path), reference[i].prefix,
			    strlen(reference[i].prefix)))
			continue;
		printf("  %-22s", "DTR's simulator (h_DTR)");
		for (size_t k = 0; k < NR_RATIOS; k++)
			printf(" %13.2f", reference[i].h[k]);
		printf("\n");
	}
}

static int cell(const struct tp_trace *t, uint64_t peak,
		const struct policy *p, double ratio, bool offload,
		uint64_t base_ns, char *buf, size_t len, double *speed)
{
	struct tp_replay_opts o = {
		.budget_bytes = (uint64_t)((double)peak * ratio),
		.chunk_size = chunk_size,
		.filter = p->filter,
		.director = p->director,
		.prefetch = offload,
		.bandwidth = offload ? 12 : 0,
		.remap_ns = 0,
		.thrash_limit = 2.0,
		.extra = offload ? NULL :
			 "pager.high_watermark=100,pager.low_watermark=100",
	};
	struct tp_replay_result r;
	int ret;

	ret = tp_replay_run(t, &o, &r);
	if (ret || r.status == TP_REPLAY_ERROR) {
		snprintf(buf, len, "err");
		fprintf(stderr, "policy-table: %s/%s at %.1f: %s\n",
			p->filter, p->director, ratio, r.error);
		return ret ? ret : r.err;
	}
	if (r.wall_s > 0)
		*speed = r.ops / r.wall_s;
	if (r.status == TP_REPLAY_OOM)
		snprintf(buf, len, "OOM");
	else if (r.status == TP_REPLAY_THRASH)
		snprintf(buf, len, "thr");
	else if (offload)
		snprintf(buf, len, "%.2f/%.2f", tp_replay_overhead(&r),
			 base_ns ? (double)r.time_ns / (double)base_ns : 0.0);
	else
		snprintf(buf, len, "%.3f", tp_replay_overhead(&r));
	return 0;
}

static int table(const struct tp_trace *t, const char *path,
		 const struct tp_trace_summary *s, const struct policy *pol,
		 size_t n_pol, bool offload)
{
	struct tp_replay_opts uo = {
		.chunk_size = chunk_size, .prefetch = 0, .remap_ns = 0,
	};
	struct tp_replay_result u;
	double speed = 0;
	int ret;

	ret = tp_replay_run(t, &uo, &u);
	if (ret || u.status != TP_REPLAY_OK) {
		fprintf(stderr, "policy-table: %s: unconstrained replay: %s\n",
			path, u.error);
		return ret ? ret : -EIO;
	}
	printf("\n%s — %s\n", base_name(path), offload ?
	       "offload at 12 GB/s + prefetch (overhead / time overhead)" :
	       "recompute only (overhead; thr = past 2.0, OOM = did not fit)");
	printf("  peak %llu bytes, %llu ops, compute %.3f ms, chunk %llu\n",
	       (unsigned long long)s->peak_bytes,
	       (unsigned long long)u.ops, s->compute_ns / 1e6,
	       (unsigned long long)(chunk_size ? chunk_size : 1 << 20));
	printf("  %-22s", "policy \\ budget ratio");
	for (size_t k = 0; k < NR_RATIOS; k++)
		printf(" %13.1f", ratios[k]);
	printf("\n");
	for (size_t i = 0; i < n_pol; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s/%s", pol[i].filter,
			 pol[i].director);
		printf("  %-22s", name);
		for (size_t k = 0; k < NR_RATIOS; k++) {
			char buf[32];

			cell(t, s->peak_bytes, &pol[i], ratios[k], offload,
			     u.time_ns, buf, sizeof(buf), &speed);
			printf(" %13s", buf);
			fflush(stdout);
		}
		printf("\n");
	}
	print_reference(path);
	printf("  replay speed of the last run: %.0f ops/s\n", speed);
	return 0;
}

static int run_log(const char *path)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace *t = NULL;
	struct tp_trace_error err;
	struct tp_trace_summary s;
	char msg[512];
	int ret;

	ret = tp_replay_load(path, &fmt, &t, &err);
	if (ret) {
		fprintf(stderr, "policy-table: %s\n",
			tp_trace_error_str(&err, msg, sizeof(msg)));
		return ret;
	}
	ret = tp_trace_peak(t, &s);
	if (!ret)
		ret = table(t, path, &s, recompute_only,
			    sizeof(recompute_only) / sizeof(recompute_only[0]),
			    false);
	if (!ret)
		ret = table(t, path, &s, with_offload,
			    sizeof(with_offload) / sizeof(with_offload[0]),
			    true);
	tp_trace_free(t);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.log.gz in the first directory of the default places found. */
static int run_default(void)
{
	const char *top = getenv("top_srcdir");
	char dirs[3][4096], *names[64], path[4096 + 512];
	size_t n = 0;
	int ret = 0;
	DIR *d = NULL;
	struct dirent *e;

	snprintf(dirs[0], sizeof(dirs[0]), "%s/../shared/traces/dtr",
		 top ? top : ".");
	snprintf(dirs[1], sizeof(dirs[1]), "../shared/traces/dtr");
	snprintf(dirs[2], sizeof(dirs[2]), "../../shared/traces/dtr");
	for (int i = 0; i < 3 && !d; i++) {
		d = opendir(dirs[i]);
		if (d)
			top = dirs[i];
	}
	if (!d) {
		fprintf(stderr, "policy-table: no DTR logs found; give their paths\n");
		return 1;
	}
	while ((e = readdir(d)) && n < 64) {
		size_t l = strlen(e->d_name);

		if (l > 7 && !strcmp(e->d_name + l - 7, ".log.gz"))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (names[i] && !ret) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", top,
					     names[i]) < sizeof(path))
				ret = run_log(path);
		}
		free(names[i]);
	}
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	int i = 1, ret = 0;

	if (i + 1 < argc && !strcmp(argv[i], "--chunk-size")) {
		chunk_size = strtoull(argv[i + 1], NULL, 0);
		if (chunk_size < 4096 || (chunk_size & (chunk_size - 1))) {
			fprintf(stderr, "policy-table: --chunk-size: a power of two of at least 4096\n");
			return 2;
		}
		i += 2;
	}
	printf("tpager policy table: DTR logs replayed on the sim backend, remap cost 0\n");
	if (i == argc)
		return run_default();
	for (; i < argc && !ret; i++)
		ret = run_log(argv[i]);
	return ret ? 1 : 0;
}
