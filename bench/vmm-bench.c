/* SPDX-License-Identifier: MIT */
/*
 * vmm-bench: what the vmm's calls cost on each backend that opens here.
 * Per-call latency of reserve, map, set-access and unmap (one chunk and
 * runs of 8 and 64: as many handles with vmm.mapping = chunks, one with
 * extents), what a map made ahead costs the issuing thread (the queueing,
 * and a stream's wait for it) and the driver thread (vmm.map_ahead), and
 * copy bandwidth each way, as a table. Host and
 * cuda figures are wall time measured by the vmm's own call counters;
 * sim figures are its virtual clock (what it was configured to charge).
 *
 *   vmm-bench [-b cuda|host|sim] [-r REPS] [-c CHUNK] [-o key=value,...]
 *
 * CHUNK (vmm.chunk_size) is the chunk of host and sim; cuda maps in the
 * device's granularity whatever it says, and the table's header says so.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tpager.h"
#include "ctl/conf.h"
#include "ctx/ctx.h"
#include "vmm/calls.h"
#include "vmm/deferred.h"
#include "vmm/vmm.h"

#define MAX_RUN 64
#define COPY_CHUNKS 64

struct row_src {
	enum tp_vmm_call kind;
	const char *label;
};

/* @conf (checked by main) on backend @name. */
static struct tp_vmm *open_backend(const struct tp_conf *conf,
				   const char *name)
{
	struct tp_conf c = *conf;
	struct tp_vmm_conf vc;

	if (tp_conf_set(&c, "vmm.backend", name, "vmm-bench", 0)) {
		errno = EINVAL;
		return NULL;
	}
	tp_ctx_vmm_conf(&c, &vc);
	return tp_vmm_open(&vc);
}

static void log_fn(enum tp_log_level level, const char *msg, void *priv)
{
	fprintf(stderr, "vmm-bench: %s%s\n", level == TP_LOG_ERROR ? "" : "note: ",
		msg);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: vmm-bench [-b cuda|host|sim] [-r REPS] [-c CHUNK] [-o key=value,...]\n");
}

/* Time per call of @k since @before, in us: wall (stats) or virtual. */
static double per_call_us(const struct tp_vmm *vmm, enum tp_vmm_call k,
			  const struct tp_vmm_stats *before)
{
	uint64_t calls = vmm->stats.call[k].calls - before->call[k].calls;
	uint64_t ns = vmm->stats.call[k].ns - before->call[k].ns;

	return calls ? (double)ns / (double)calls / 1e3 : 0;
}

static void print_row(const char *op, const char *what, size_t run,
		      double us)
{
	printf("  %-12s %14s %12.2f %14.2f\n", op, what, us,
	       us / (double)run);
}

/* Map and unmap one run of @n pages @reps times: a row per call kind. */
static int bench_run(struct tp_vmm *vmm, bool sim, int reps, uintptr_t va,
		     size_t n)
{
	struct tp_vmm_stats before = vmm->stats;
	struct tp_chunk *c[MAX_RUN];
	uint64_t vmap = 0, vunmap = 0;
	size_t handles = 0;
	char what[32];
	int ret, i;

	ret = tp_vmm_chunks_take(vmm, c, n);
	if (ret)
		return ret;
	for (size_t k = 0; k < n; k += c[k]->pages)
		handles++;
	for (i = 0; i < reps && !ret; i++) {
		uint64_t t = tp_vmm_now_ns(vmm);

		ret = tp_vmm_map(vmm, va, c, n);
		vmap += tp_vmm_now_ns(vmm) - t;
		t = tp_vmm_now_ns(vmm);
		ret = ret ?: tp_vmm_unmap(vmm, va, c, n);
		vunmap += tp_vmm_now_ns(vmm) - t;
	}
	tp_vmm_chunks_put(vmm, c, n);
	if (ret)
		return ret;
	snprintf(what, sizeof(what), "%zu/%zu", n, handles);
	if (sim) {
		/* Virtual: map + set access together, as charged. */
		print_row("map+access", what, n, (double)vmap / reps / 1e3);
		print_row("unmap", what, n, (double)vunmap / reps / 1e3);
		return 0;
	}
	print_row("map", what, n, per_call_us(vmm, TP_CALL_MAP, &before));
	print_row("set_access", what, n,
		  per_call_us(vmm, TP_CALL_SET_ACCESS, &before));
	print_row("unmap", what, n, per_call_us(vmm, TP_CALL_UNMAP, &before));
	return 0;
}

static int bench_map(struct tp_vmm *vmm, bool sim, int reps)
{
	static const size_t runs[] = { 1, 8, MAX_RUN };
	size_t g = vmm->granularity, r;
	uintptr_t va;
	int ret = 0, i;

	printf("  %-12s %14s %12s %14s\n", "call", "chunks/handles", "us/call",
	       "us/chunk");
	/* reserve/release of a 64-chunk range */
	{
		struct tp_vmm_stats before = vmm->stats;
		uint64_t vres = 0, vrel = 0;

		for (i = 0; i < reps && !ret; i++) {
			uint64_t t = tp_vmm_now_ns(vmm);

			ret = tp_vmm_reserve(vmm, MAX_RUN * g, &va);
			vres += tp_vmm_now_ns(vmm) - t;
			t = tp_vmm_now_ns(vmm);
			ret = ret ?: tp_vmm_release(vmm, va, MAX_RUN * g);
			vrel += tp_vmm_now_ns(vmm) - t;
		}
		if (ret)
			return ret;
		print_row("reserve", "", MAX_RUN, sim ? (double)vres / reps / 1e3 :
			  per_call_us(vmm, TP_CALL_RESERVE, &before));
		print_row("release", "", MAX_RUN, sim ? (double)vrel / reps / 1e3 :
			  per_call_us(vmm, TP_CALL_RELEASE, &before));
	}
	ret = tp_vmm_reserve(vmm, MAX_RUN * g, &va);
	if (ret)
		return ret;
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]) && !ret; r++)
		ret = bench_run(vmm, sim, reps, va, runs[r]);
	tp_vmm_release(vmm, va, MAX_RUN * g);
	return ret;
}

/* The time a bench reads: the sim's virtual clock, else the host's. */
static uint64_t bench_now(struct tp_vmm *vmm, bool sim)
{
	return sim ? tp_vmm_now_ns(vmm) : tp_vmm_mono_ns();
}

/*
 * Maps made ahead, a run of 8 chunks @reps times: the issuing thread's
 * time to queue one and to make the compute stream wait for it, and the
 * driver thread's to make it (its map and access grant).
 */
static int bench_ahead(struct tp_vmm *vmm, bool sim, int reps)
{
	size_t g = vmm->granularity, n = 8;
	struct tp_chunk *c[8];
	uint64_t queue = 0, gate = 0, bg_ns = vmm->stats.bg_ns, t;
	uint64_t waits = vmm->stats.gate_waits;
	uintptr_t va;
	int ret, i;

	if (!vmm->deferred->ahead.on) {
		printf("\n  maps ahead: off (no driver thread, or streams that cannot wait for it)\n");
		return 0;
	}
	ret = tp_vmm_reserve(vmm, n * g, &va);
	if (ret)
		return ret;
	ret = tp_vmm_chunks_take(vmm, c, n);
	for (i = 0; i < reps && !ret; i++) {
		t = bench_now(vmm, sim);
		ret = tp_vmm_map_ahead(vmm, va, c, n);
		queue += bench_now(vmm, sim) - t;
		t = bench_now(vmm, sim);
		ret = ret ?: tp_vmm_gate(vmm, TP_STREAM_COMPUTE);
		gate += bench_now(vmm, sim) - t;
		/* waits for the driver thread's map first */
		ret = ret ?: tp_vmm_unmap(vmm, va, c, n);
	}
	if (!ret)
		ret = tp_vmm_sync_all(vmm);
	tp_vmm_chunks_put(vmm, c, n);
	tp_vmm_release(vmm, va, n * g);
	if (ret)
		return ret;
	printf("\n  %-26s %12s\n", "maps ahead (8 chunks)", "us");
	printf("  %-26s %12.2f\n", "queue (issuing thread)",
	       (double)queue / reps / 1e3);
	printf("  %-26s %12.2f  (%llu of %d waited)\n",
	       "stream wait (issuing)", (double)gate / reps / 1e3,
	       (unsigned long long)(vmm->stats.gate_waits - waits), reps);
	printf("  %-26s %12.2f\n", "map+access (driver thread)",
	       (double)(vmm->stats.bg_ns - bg_ns) / reps / 1e3);
	return 0;
}

static int bench_copy(struct tp_vmm *vmm, bool sim, int reps)
{
	size_t g = vmm->granularity, len = COPY_CHUNKS * g;
	struct tp_chunk *c[COPY_CHUNKS];
	void *host;
	uintptr_t va;
	int ret, dir, i;

	host = tp_vmm_host_alloc(vmm, len);
	if (!host)
		return -ENOMEM;
	ret = tp_vmm_reserve(vmm, len, &va);
	if (ret)
		goto out_free;
	ret = tp_vmm_chunks_take(vmm, c, COPY_CHUNKS);
	if (ret)
		goto out_release;
	ret = tp_vmm_map(vmm, va, c, COPY_CHUNKS);
	if (ret)
		goto out_put;
	if (!sim)
		memset(host, 1, len);
	/* Warm up: first touches of the pages are not the link's cost. */
	ret = tp_vmm_copy_h2d(vmm, va, host, len, TP_STREAM_H2D) ?:
	      tp_vmm_copy_d2h(vmm, host, va, len, TP_STREAM_D2H) ?:
	      tp_vmm_sync_all(vmm);
	printf("\n  %-12s %10s %10s %12s\n", "copy", "MiB", "copies", "GB/s");
	for (dir = 0; dir < 2 && !ret; dir++) {
		enum tp_stream s = dir ? TP_STREAM_H2D : TP_STREAM_D2H;
		uint64_t t0, t1;

		t0 = bench_now(vmm, sim);
		for (i = 0; i < reps && !ret; i++)
			ret = dir ? tp_vmm_copy_h2d(vmm, va, host, len, s) :
				    tp_vmm_copy_d2h(vmm, host, va, len, s);
		ret = ret ?: tp_vmm_stream_sync(vmm, s);
		t1 = bench_now(vmm, sim);
		if (!ret)
			printf("  %-12s %10zu %10d %12.2f\n",
			       dir ? "host->device" : "device->host", len >> 20,
			       reps, (double)len * reps / (double)(t1 - t0));
	}
	tp_vmm_unmap(vmm, va, c, COPY_CHUNKS);
out_put:
	tp_vmm_chunks_put(vmm, c, COPY_CHUNKS);
out_release:
	tp_vmm_release(vmm, va, len);
out_free:
	tp_vmm_host_free(vmm, host, len);
	return ret;
}

int main(int argc, char **argv)
{
	static const char *const all[] = { "cuda", "host", "sim" };
	const char *only = NULL, *chunk = NULL, *opts = NULL;
	int reps = 200, opt, i, status = 0;
	struct tp_conf conf;
	char *end;
	long r;

	opterr = 0;
	while ((opt = getopt(argc, argv, ":b:r:c:o:h")) != -1) {
		switch (opt) {
		case 'b':
			if (strcmp(optarg, "cuda") && strcmp(optarg, "host") &&
			    strcmp(optarg, "sim")) {
				fprintf(stderr, "vmm-bench: -b: unknown backend '%s' (cuda, host, sim)\n",
					optarg);
				return 2;
			}
			only = optarg;
			break;
		case 'r':
			r = strtol(optarg, &end, 10);
			if (*end || end == optarg || r < 1 || r > 1000000) {
				fprintf(stderr, "vmm-bench: -r: '%s' is not a count from 1 to 1000000\n",
					optarg);
				return 2;
			}
			reps = (int)r;
			break;
		case 'c': chunk = optarg; break;
		case 'o': opts = optarg; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "vmm-bench: option '-%c' needs a value\n",
				optopt);
			usage(stderr);
			return 2;
		default:
			fprintf(stderr, "vmm-bench: unknown option '-%c'\n", optopt);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmm-bench: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	/* The settings are checked once, before any backend opens: a bad one
	 * is a usage error, not a backend that "does not open here". */
	tp_set_log(log_fn, NULL);
	tp_conf_defaults(&conf);
	if ((chunk && tp_conf_set(&conf, "vmm.chunk_size", chunk, "-c", 0)) ||
	    (opts && tp_conf_apply_opts(&conf, opts, "-o")) ||
	    tp_conf_check(&conf, chunk ? "-c" : "-o"))
		return 2;

	for (i = 0; i < 3; i++) {
		struct tp_vmm *vmm;
		bool sim;
		int ret;

		if (only && strcmp(only, all[i]) != 0)
			continue;
		vmm = open_backend(&conf, all[i]);
		if (!vmm) {
			printf("== %s: does not open here (%s)\n\n", all[i],
			       strerror(errno));
			if (only)
				status = 1;
			continue;
		}
		sim = !tp_vmm_has_data(vmm);
		printf("== %s: chunk %zu KiB, mapping %s, %d repetitions, %s\n",
		       all[i], vmm->granularity >> 10,
		       vmm->mapping == TP_VMM_MAPPING_CHUNKS ? "chunks" :
							       "extents", reps,
		       sim ? "virtual time (configured costs)" : "wall time");
		/* vmm.chunk_size is for host and sim (tpager.conf(5)). */
		if (chunk && vmm->granularity != conf.vmm_chunk_size)
			printf("   (the device's granularity: -c %s applies to host and sim only)\n",
			       chunk);
		ret = tp_vmm_pool_create(vmm, (uint64_t)(MAX_RUN + COPY_CHUNKS) *
					 vmm->granularity);
		ret = ret ?: bench_map(vmm, sim, reps);
		ret = ret ?: bench_ahead(vmm, sim, reps);
		ret = ret ?: bench_copy(vmm, sim, reps > 20 ? 20 : reps);
		if (ret) {
			printf("  failed: %s\n", strerror(-ret));
			status = 1;
		}
		printf("\n");
		tp_vmm_close(vmm);
	}
	return status;
}
