/* SPDX-License-Identifier: MIT */
/*
 * Fault injection at every backend call of an offload, a reload and a
 * prefetch: the N-th call fails, for N = 1, 2, ... until the operation
 * runs out of calls. Each time, the call must fail cleanly (or succeed),
 * the data must read back byte for byte once the fault is gone, and no
 * chunk may be lost.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"

enum phase { OFFLOAD, RELOAD, PREFETCH, NR_PHASES };
static const char *const names[] = { "offload", "reload", "prefetch" };

struct result {
	unsigned runs, failed, bad_data, lost_chunks, odd_rc;
};

static void run_one(enum phase ph, long nth, struct result *r, bool *fired)
{
	struct tp_ctx *ctx = pt_ctx("pager.budget=16C,pager.host_budget=64C");
	size_t chunk = pt_chunk(ctx), bytes = 3 * chunk + 1000;
	unsigned char *src = malloc(bytes), *dst = malloc(bytes);
	struct tp_pager *pg = ctx->pager;
	struct tp_vmm *vmm = ctx->vmm;
	struct tp_tensor *t;
	int rc, rc2;

	pt_fill(src, bytes, 7 + nth);
	t = tp_tensor_create(ctx, bytes, 0);
	if (!t || tp_tensor_write(ctx, t, 0, src, bytes))
		bail_out("setup failed");
	if (ph != OFFLOAD) {
		if (tp_tensor_offload(ctx, t) || tp_sync(ctx))
			bail_out("offload for setup failed");
	}

	tp_vmm_fail_at(vmm, nth, EIO);
	switch (ph) {
	case OFFLOAD:
		rc = tp_tensor_offload(ctx, t);
		break;
	case RELOAD:
		rc = tp_tensor_read(ctx, t, 0, dst, bytes);
		if (!rc && memcmp(src, dst, bytes))
			r->bad_data++;
		break;
	default:
		rc = tp_tensor_prefetch(ctx, t);
		break;
	}
	*fired = __atomic_load_n(&vmm->fail_at, __ATOMIC_RELAXED) == 0;
	tp_vmm_fail_at(vmm, 0, 0);
	r->runs++;
	if (rc)
		r->failed++;
	/* A failed host allocation reads as -ENOMEM, the rest as -EIO. */
	if (rc && rc != -EIO && rc != -ENOMEM) {
		r->odd_rc++;
		diag("%s, call %ld: %s", names[ph], nth, tp_strerror(rc));
	}

	/* Whatever happened, the data is all there. */
	memset(dst, 0, bytes);
	rc2 = tp_tensor_read(ctx, t, 0, dst, bytes);
	if (rc2 || memcmp(src, dst, bytes)) {
		r->bad_data++;
		diag("%s, call %ld failing: rc %d, read after: %d", names[ph],
		     nth, rc, rc2);
	}
	/* Offload and read again: the pages still move. */
	if (tp_tensor_offload(ctx, t) || tp_tensor_read(ctx, t, 0, dst, bytes) ||
	    memcmp(src, dst, bytes))
		r->bad_data++;
	tp_tensor_free(ctx, t);
	tp_sync(ctx);
	tp_vmm_reap(vmm);
	/* Every chunk is free, cached (free but mapped), or nowhere lost. */
	if (tp_vmm_chunks_free(vmm) + pg->cache.chunks + pg->held !=
	    vmm->nr_chunks || pg->held != pg->slabs.chunks) {
		r->lost_chunks++;
		diag("%s, call %ld: free %zu held %zu of %zu", names[ph], nth,
		     tp_vmm_chunks_free(vmm), pg->held, vmm->nr_chunks);
	}
	tp_ctx_destroy(ctx);
	free(src);
	free(dst);
}

int main(void)
{
	pt_probe();
	plan_tests(4 * NR_PHASES);
	for (int ph = 0; ph < NR_PHASES; ph++) {
		struct result r = { 0 };
		bool fired = true;
		long nth;

		for (nth = 1; fired && nth < 200; nth++)
			run_one(ph, nth, &r, &fired);
		diag("%s: %u runs, %u failed with the injected error",
		     names[ph], r.runs, r.failed);
		ok(r.runs > 3 && r.failed > 0,
		   "%s: %u injected faults, %u made it fail", names[ph],
		   r.runs - 1, r.failed);
		ok(r.bad_data == 0, "%s: data readable after every fault (%u bad)",
		   names[ph], r.bad_data);
		ok(r.lost_chunks == 0, "%s: no chunk lost (%u runs lost some)",
		   names[ph], r.lost_chunks);
		ok(r.odd_rc == 0, "%s: failures return -EIO (or -ENOMEM)",
		   names[ph]);
	}
	return exit_status();
}
