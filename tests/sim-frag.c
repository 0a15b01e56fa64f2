// SPDX-License-Identifier: MIT
/*
 * The fragmenting baseline through tpager-sim's own path (tp_trace_load,
 * tp_trace_peak, tp_replay_run): a tpager-trace(5) file written here, in
 * which freed activations leave holes between parameters, replayed with
 * vmm.mode = contiguous and on chunks. The contiguous pool reports a
 * fragmentation rate above 0 and needs a larger budget than the trace's
 * peak of live bytes; chunks report 0 and fit below that peak.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "trace/replay.h"

#define CH	4096u	/* the chunk; every size below is a whole number */
#define PAIRS	8

/*
 * Sizes in chunks: parameters p1..p8 1 each (uncomputable: they never
 * leave under dtr/evict), activations a_i = fill(p_i) 2 each, created in
 * turn: p1 a1 p2 a2 ... p8 a8, 24 chunks live (the trace's peak). All
 * a_i are freed, then b = big(p1) of 8 and o = use(b, p2) of 1.
 *
 * Chunks: at o, 8 parameters + b + o = 17 are live, the least any budget
 * can hold; a_i can be evicted earlier (nothing reads them again). So the
 * minimum budget is 17 chunks.
 *
 * Contiguous, with a budget of N >= 24 chunks: best fit from the left
 * lays out p1 [0] a1 [1,2] p2 [3] ... p8 [21] a8 [22,23], free [24, N).
 * Freeing the a_i leaves holes of 2 between parameters, which cannot
 * leave; only a8's hole joins the free tail. b needs 8 in one run:
 * N - 22 >= 8, so the minimum budget is 30 chunks, more than the peak.
 * Below it, b finds at least 8 chunks free in total but no run of 8:
 * a fragmentation sample of free / N, the holes and the tail (the range
 * cache gives back what it holds before the pool's shape is judged):
 * between 8/N and (N - 8)/N, all but the parameters.
 */
static char *write_trace(char *path)
{
	unsigned id = 1, p[PAIRS], a;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return NULL;
	}
	fprintf(f, "tpager-trace 1\n# parameters between activations\n");
	for (unsigned i = 0; i < PAIRS; i++) {
		p[i] = id++;
		fprintf(f, "tensor %u %u param\n", p[i], CH);
		fprintf(f, "op fill 1000 %u => %u:%u:activation,computable\n",
			p[i], id++, 2 * CH);
	}
	for (unsigned i = 0; i < PAIRS; i++)
		fprintf(f, "free %u\n", p[i] + 1);
	a = id++;
	fprintf(f, "op big 4000 %u => %u:%u:activation,computable\n", p[0], a,
		8 * CH);
	fprintf(f, "op use 1000 %u %u => %u:%u:activation,computable\n", a,
		p[1], id, CH);
	fprintf(f, "free %u\nfree %u\n", a, id);
	if (fclose(f))
		return NULL;
	return path;
}

static int run(const struct tp_trace *t, bool contiguous, uint64_t chunks,
	       struct tp_replay_result *r)
{
	struct tp_replay_opts o = {
		.budget_bytes = chunks * CH,
		.chunk_size = CH,
		.filter = "dtr",
		.director = "evict",
		.prefetch = -1,
		.remap_ns = -1,
		.extra = contiguous ? "vmm.mode=contiguous" : NULL,
	};
	int ret = tp_replay_run(t, &o, r);

	if (ret)
		diag("replay: %s", r->error);
	return ret;
}

/* The smallest budget in chunks, from @from down (or up) while it fits. */
static long min_chunks(const struct tp_trace *t, bool contiguous,
		       uint64_t from)
{
	struct tp_replay_result r;
	long min = -1;

	if (run(t, contiguous, from, &r))
		return -2;
	if (r.status == TP_REPLAY_OK) {
		for (uint64_t n = from; n > 0; n--) {
			if (run(t, contiguous, n, &r))
				return -2;
			if (r.status != TP_REPLAY_OK)
				break;
			min = (long)n;
		}
		return min;
	}
	for (uint64_t n = from + 1; n <= 2 * from; n++) {
		if (run(t, contiguous, n, &r))
			return -2;
		if (r.status == TP_REPLAY_OK)
			return (long)n;
	}
	return -1;
}

static bool same_result(const struct tp_replay_result *a,
			const struct tp_replay_result *b)
{
	return a->status == b->status && a->phys_peak == b->phys_peak &&
	       a->time_ns == b->time_ns && a->ops == b->ops &&
	       a->evictions == b->evictions &&
	       a->fragmentation_ppm == b->fragmentation_ppm &&
	       a->policy_decisions == b->policy_decisions;
}

int main(void)
{
	char tmpl[] = "/tmp/tp-sim-frag.XXXXXX";
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_replay_result c, k, k2;
	struct tp_trace_summary sum;
	struct tp_trace_error err;
	struct tp_trace *t = NULL;
	const uint64_t peak = (PAIRS * 3) * (uint64_t)CH;
	long min_chunked, min_contig;
	char msg[512], *path;
	int ret;

	plan_tests(17);
	path = write_trace(tmpl);
	if (!path)
		bail_out("writing the trace: %s", strerror(errno));
	ret = tp_trace_load(path, &fmt, &t, &err);
	unlink(path);
	if (!ok(!ret && fmt == TP_TRACE_FMT_TEXT, "the trace loads as tpager-trace(5)"))
		bail_out("%s", tp_trace_error_str(&err, msg, sizeof(msg)));
	ok_rc(tp_trace_peak(t, &sum), "peak accounting");
	ok(sum.peak_bytes == peak, "peak of live bytes: %llu (want %llu)",
	   (unsigned long long)sum.peak_bytes, (unsigned long long)peak);

	/* At the trace's peak: chunks fit, the contiguous pool does not. */
	ok_rc(run(t, false, peak / CH, &k), "chunks at the peak");
	ok(k.status == TP_REPLAY_OK && k.evictions == 0 &&
	   k.phys_peak <= peak,
	   "chunks at the peak: fits without evicting (%llu evictions, peak %llu)",
	   (unsigned long long)k.evictions, (unsigned long long)k.phys_peak);
	ok(k.fragmentation_ppm == 0, "chunks: fragmentation 0 (%llu ppm)",
	   (unsigned long long)k.fragmentation_ppm);
	ok_rc(run(t, true, peak / CH, &c), "contiguous at the peak");
	ok(c.status == TP_REPLAY_OOM, "contiguous at the peak: does not fit");
	ok(c.ops == PAIRS, "contiguous: the %u fills ran, big found no room (%llu ops)",
	   PAIRS, (unsigned long long)c.ops);
	ok(c.fragmentation_ppm >= 8 * 1000000ull / 24 &&
	   c.fragmentation_ppm <= 16 * 1000000ull / 24,
	   "contiguous: fragmentation %.4f in [8/24, 16/24]",
	   c.fragmentation_ppm / 1e6);
	diag("contiguous at 24 chunks: fragmentation %.4f",
	     c.fragmentation_ppm / 1e6);

	/* Coop's metric, chunk by chunk. */
	min_chunked = min_chunks(t, false, peak / CH);
	min_contig = min_chunks(t, true, peak / CH);
	diag("minimum budget: %ld chunks on chunks, %ld contiguous (peak %llu)",
	     min_chunked, min_contig, (unsigned long long)(peak / CH));
	ok(min_chunked == 17, "chunks: minimum budget 17 chunks (%ld)",
	   min_chunked);
	ok(min_contig == 30, "contiguous: minimum budget 30 chunks (%ld)",
	   min_contig);
	ok(min_contig > (long)(peak / CH) && min_chunked < (long)(peak / CH),
	   "contiguous needs more than the peak, chunks less");

	/* Just under its minimum the contiguous pool fails by fragmenting. */
	ok_rc(run(t, true, 29, &c), "contiguous at 29 chunks");
	ok(c.status == TP_REPLAY_OOM && c.fragmentation_ppm >= 8 * 1000000ull / 29 &&
	   c.fragmentation_ppm <= 21 * 1000000ull / 29,
	   "contiguous at 29 chunks: OOM, fragmentation %.4f in [8/29, 21/29]",
	   c.fragmentation_ppm / 1e6);

	/* Determinism: the same replay twice gives the same figures. */
	run(t, false, 17, &k);
	run(t, false, 17, &k2);
	ok(same_result(&k, &k2) && k.status == TP_REPLAY_OK,
	   "chunks at 17: the same figures twice");
	run(t, true, 30, &c);
	run(t, true, 30, &k2);
	ok(same_result(&c, &k2) && c.status == TP_REPLAY_OK,
	   "contiguous at 30: the same figures twice");

	tp_trace_free(t);
	return exit_status();
}
