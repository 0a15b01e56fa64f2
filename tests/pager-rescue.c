/* SPDX-License-Identifier: MIT */
/*
 * Rescues. Memory a tensor leaves goes back to the pool at once (ordered
 * reuse), while its old mapping waits for the work still using it; a
 * tensor used again before anyone takes that memory gets it back as it
 * was, with neither a copy nor a recompute.
 *
 * sim (no data: counts): an op's output evicted while the op still runs
 * comes back rescued, without a recompute; once another tensor took the
 * memory, it is recomputed instead; one rescued by a prefetch while its
 * offload is copied out, then evicted, is unmapped only after the copy.
 * With the custom profile (the caller reaps the unmaps) and with h200's
 * (the played driver thread).
 *
 * host (bytes): an offload held by the copy engine's gate, then a read
 * from another thread: the pages come back rescued, with no reload, the
 * bytes are the ones written, and the read returns only once the copy
 * is done (a later unmap must not pull the memory from under it); with
 * pager.swap_cache the copy it met in flight is the cache's, so the next
 * offload copies nothing and a read still gets the bytes. A
 * tensor lineage keeps after its free (fake deletion) whose offload is
 * in flight is dropped without waiting for the copy, and what depends on
 * it still regenerates right; asked back then, nothing left at the range
 * it gave up is rescued.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/pager-util.h"
#include "vmm/backend_host.h"

#define SLOW_NS		5000000ull	/* 5 ms: the op still runs */

static uint64_t slow_cost(const void *params, size_t params_len,
			  const size_t *in_bytes, unsigned n_in)
{
	(void)params, (void)params_len, (void)in_bytes, (void)n_in;
	return SLOW_NS;
}

/* Never launched: the sim backend has no data. */
static int slow_launch(const struct tp_op_launch *l)
{
	(void)l;
	return -ENOTSUP;
}

static const struct tp_op_type slow_op = {
	.name = "slow_copy",
	.launch = slow_launch,
	.cost_ns = slow_cost,
};

/*
 * A sim context on @profile with @x, written, and @y = slow_op(@x) of
 * @bytes, the op still running.
 */
static struct tp_ctx *slow_output(const char *profile, size_t bytes,
				  struct tp_tensor **x, struct tp_tensor **y)
{
	char opts[160];
	struct tp_ctx *ctx;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=2M,pager.budget=64M,"
		 "vmm.sim.profile=%s,pager.range_cache=0", profile);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("%s: tp_ctx_create: %s", profile, strerror(errno));
	*x = tp_tensor_create(ctx, bytes, TP_UNCOMPUTABLE);
	if (!*x || !tp_tensor_acquire(ctx, *x, TP_WRITE) ||
	    tp_tensor_release(ctx, *x))
		bail_out("%s: input", profile);
	if (tp_op_run(ctx, &slow_op, NULL, 0, x, 1, y, &bytes, 1))
		bail_out("%s: op", profile);
	return ctx;
}

static void sim_case(const char *profile)
{
	size_t bytes = 8u << 20;
	struct tp_tensor *x, *y, *z;
	struct tp_stats st0, st;
	struct tp_ctx *ctx = slow_output(profile, bytes, &x, &y);

	/* Evicted while its op runs: the memory waits, untaken. */
	tp_stats_get(ctx, &st0);
	ok_rc(tp_tensor_evict(ctx, y), "%s: output evicted while its op runs",
	      profile);
	ok(tp_tensor_acquire(ctx, y, TP_READ) != NULL,
	   "%s: and acquired again", profile);
	tp_stats_get(ctx, &st);
	ok(st.rescued_pages - st0.rescued_pages == 4 &&
	   st.recomputes == st0.recomputes,
	   "%s: its 4 pages rescued, nothing recomputed (%" PRIu64
	   " rescued, %" PRIu64 " recomputes)", profile,
	   st.rescued_pages - st0.rescued_pages,
	   st.recomputes - st0.recomputes);
	ok(st.phys_bytes == st0.phys_bytes,
	   "%s: the memory it holds is what it held", profile);
	tp_tensor_release(ctx, y);

	/* Evicted again; its memory goes to another tensor, and back to
	 * the pool, first. */
	ok_rc(tp_tensor_evict(ctx, y), "%s: evicted again", profile);
	tp_stats_get(ctx, &st0);
	z = tp_tensor_create(ctx, bytes, TP_UNCOMPUTABLE);
	ok(z && tp_tensor_acquire(ctx, z, TP_WRITE) &&
	   !tp_tensor_release(ctx, z) && !tp_tensor_free(ctx, z),
	   "%s: another tensor of its size written and freed", profile);
	ok(tp_tensor_acquire(ctx, y, TP_READ) != NULL,
	   "%s: the evicted one acquired", profile);
	tp_stats_get(ctx, &st);
	ok(st.rescued_pages == st0.rescued_pages &&
	   st.recomputes - st0.recomputes == 1,
	   "%s: taken memory is not rescued: recomputed (%" PRIu64
	   " rescued, %" PRIu64 " recomputes)", profile,
	   st.rescued_pages - st0.rescued_pages,
	   st.recomputes - st0.recomputes);
	tp_tensor_release(ctx, y);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
}

/*
 * A prefetch that rescues a tensor whose offload is still being copied
 * out, then an eviction before any op uses it: the pages are unmapped
 * only after the copy, which reads them (the sim faults, as a GPU does,
 * on memory unmapped under a copy in flight).
 */
static void sim_prefetch_case(const char *profile)
{
	size_t bytes = 8u << 20;
	struct tp_tensor *x, *y;
	struct tp_stats st0, st;
	struct tp_ctx *ctx = slow_output(profile, bytes, &x, &y);
	tp_stats_get(ctx, &st0);
	ok(!tp_tensor_offload(ctx, y) && !tp_tensor_prefetch(ctx, y) &&
	   !tp_tensor_evict(ctx, y),
	   "%s: offloaded, asked back while copied out, evicted", profile);
	tp_stats_get(ctx, &st);
	ok(st.rescued_pages - st0.rescued_pages == 4,
	   "%s: the prefetch rescued its 4 pages (%" PRIu64 ")", profile,
	   st.rescued_pages - st0.rescued_pages);
	/*
	 * The host gets to the op's end, and reaps there what is due, while
	 * the copy still runs (the custom profile's unmaps are the caller's
	 * to reap); a fault fails every sync after it.
	 */
	tp_vmm_stream_sync(ctx->vmm, TP_STREAM_COMPUTE);
	tp_vmm_reap(ctx->vmm);
	ok(!tp_sync(ctx) && !tp_sync(ctx),
	   "%s: no page unmapped under the copy", profile);
	tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
}

struct reader {
	struct tp_ctx *ctx;
	struct tp_tensor *t;
	void *buf;
	size_t bytes;
	int ret;
	volatile int done;
};

static void *read_tensor(void *arg)
{
	struct reader *r = arg;

	r->ret = tp_tensor_read(r->ctx, r->t, 0, r->buf, r->bytes);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "Bail out! a call waited for a held copy\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

static void host_offload_case(bool cache)
{
	struct tp_ctx *ctx = pt_ctx(cache ?
		"pager.budget=16C,pager.range_cache=0,pager.rescue=1,pager.swap_cache=1" :
		"pager.budget=16C,pager.range_cache=0,pager.rescue=1,pager.swap_cache=0");
	size_t bytes = 4 * pt_chunk(ctx);
	unsigned char *buf = malloc(bytes), *got = calloc(1, bytes);
	struct reader r = { .ctx = ctx, .buf = got, .bytes = bytes };
	struct tp_stats st0, st;
	pthread_t th;
	bool waited;

	if (!buf || !got)
		bail_out("buffers");
	pt_fill(buf, bytes, pt_seed());
	r.t = tp_tensor_create(ctx, bytes, 0);
	ok(r.t && !tp_tensor_write(ctx, r.t, 0, buf, bytes),
	   "host: tensor written");
	tp_stats_get(ctx, &st0);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	ok_rc(tp_tensor_offload(ctx, r.t), "host: offload held by the gate");
	if (pthread_create(&th, NULL, read_tensor, &r))
		bail_out("thread");
	usleep(100000);
	waited = !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, false);
	pthread_join(th, NULL);
	ok(waited && r.ret == 0,
	   "host: the read returned once the copy was done (%d)", r.ret);
	tp_stats_get(ctx, &st);
	ok(st.rescued_pages - st0.rescued_pages == 4 &&
	   st.reloads == st0.reloads && st.bytes_h2d == st0.bytes_h2d,
	   "host: its 4 pages rescued, nothing reloaded (%" PRIu64
	   " rescued, %" PRIu64 " reloads)",
	   st.rescued_pages - st0.rescued_pages, st.reloads - st0.reloads);
	ok(!memcmp(buf, got, bytes), "host: the bytes are the ones written");
	/* Back with its bytes: offloaded and read again the usual way. */
	st0 = st;
	ok_rc(tp_tensor_offload(ctx, r.t), "host: offloaded again");
	tp_sync(ctx);
	tp_stats_get(ctx, &st);
	if (cache)
		ok(st.bytes_d2h == st0.bytes_d2h &&
		   st.cache_offloads == st0.cache_offloads + 1,
		   "host, swap cache: the copy the rescue met in flight is the cache's: the offload copied nothing");
	else
		ok(st.bytes_d2h == st0.bytes_d2h + bytes,
		   "host: the offload copied the tensor again (%" PRIu64 " bytes)",
		   st.bytes_d2h - st0.bytes_d2h);
	memset(got, 0, bytes);
	ok(!tp_tensor_read(ctx, r.t, 0, got, bytes) &&
	   !memcmp(buf, got, bytes), "host: and read back right");
	tp_tensor_free(ctx, r.t);
	tp_ctx_destroy(ctx);
	free(buf);
	free(got);
}

/*
 * y, freed while its offload is in flight, is dropped and its range goes;
 * with @prefetch the library then asks y back (as a prefetcher whose
 * record names it would) before the unmap left at the old range is done:
 * nothing at that address is y's any more, so nothing is rescued, and a
 * regeneration through y reads y at its new range.
 */
static void host_fake_delete_case(bool prefetch)
{
	static const struct tops_scale_params sp = { 1.5f, 0.25f };
	const char *how = prefetch ? "host, y asked back" : "host";
	struct tp_ctx *ctx = pt_ctx("pager.budget=32C,pager.range_cache=0,pager.rescue=1");
	size_t n = 4 * pt_chunk(ctx) / sizeof(float);
	float *x0 = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	struct tp_tensor *x, *y, *z;
	bool right = true;

	if (!x0 || !got)
		bail_out("buffers");
	x = tops_input(ctx, n, pt_seed() + 1);
	y = x ? tops_run1(ctx, &tops_scale, &sp, sizeof(sp), x,
			  n * sizeof(float)) : NULL;
	z = y ? tops_run1(ctx, &tops_scale, &sp, sizeof(sp), y,
			  n * sizeof(float)) : NULL;
	ok(z && !tp_tensor_read(ctx, x, 0, x0, n * sizeof(float)),
	   "%s: x -> y -> z computed", how);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, true);
	ok_rc(tp_tensor_offload(ctx, y), "%s: y's offload held by the gate", how);
	signal(SIGALRM, on_alarm);
	alarm(10);
	ok_rc(tp_tensor_free(ctx, y),
	      "%s: y freed (lineage keeps it for z) without waiting", how);
	alarm(0);
	tp_vmm_host_gate(ctx->vmm, TP_STREAM_D2H, false);
	if (prefetch) {
		struct tp_stats st0, st;

		tp_stats_get(ctx, &st0);
		tp_pager_prefetch(ctx->pager, y);
		tp_stats_get(ctx, &st);
		ok(st.rescued_pages == st0.rescued_pages,
		   "%s: nothing rescued at the range y no longer has (%" PRIu64 ")",
		   how, st.rescued_pages - st0.rescued_pages);
	}
	ok_rc(tp_tensor_evict(ctx, z), "%s: z evicted", how);
	ok(!tp_tensor_read(ctx, z, 0, got, n * sizeof(float)),
	   "%s: z read: regenerated through y", how);
	for (size_t i = 0; i < n; i++) {
		float v = tops_ref_scale(tops_ref_scale(x0[i], sp.s, sp.c),
					 sp.s, sp.c);

		right &= memcmp(&v, &got[i], sizeof(v)) == 0;
	}
	ok(right, "%s: z's bits are the ones computed the first time", how);
	tp_tensor_free(ctx, z);
	tp_tensor_free(ctx, x);
	tp_ctx_destroy(ctx);
	free(x0);
	free(got);
}

int main(void)
{
	bool host = !strcmp(pt_backend(), "host");

	plan_tests(2 * 8 + 2 * 3 + (host ? 2 * 8 + 6 + 7 : 0));
	sim_case("custom");
	sim_case("h200");
	sim_prefetch_case("custom");
	sim_prefetch_case("h200");
	if (host) {
		pt_probe();
		host_offload_case(false);
		host_offload_case(true);
		host_fake_delete_case(false);
		host_fake_delete_case(true);
	} else {
		diag("the host cases need the host backend's copy gate");
	}
	return exit_status();
}
