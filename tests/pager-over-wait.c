/* SPDX-License-Identifier: MIT */
/*
 * A demand whose room is still on its way out to host swap asks
 * choose_over_wait for a victim that leaves at once: one given is taken
 * and nothing is waited for; -ENOENT, or no such hook, waits for the
 * copy (on sim, exactly its cost in virtual time). Both tensors come
 * back either way (sim has no bytes to compare: the state is checked).
 *
 * While compute is busy, the victim's chunks come back only once the
 * compute queued before it is done: they are owed to the demand, which
 * waits for compute, not for the copy, and asks for no second victim
 * (asked again for the same shortfall, it once sent every candidate
 * away, one after the other).
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-hooks-util.h"
#include "tests/pager-util.h"
#include "vmm/vmm.h"

#define CHUNK (64u << 10)
#define BYTES (2 * CHUNK)

static struct {
	struct tp_tensor *instead;	/* what choose_over_wait answers */
	bool any;			/* or any candidate resident */
	uint64_t wait_bytes;		/* what it was told */
	unsigned asked;
} h;

static int h_choose(void *priv, size_t need, bool no_offload,
		    struct tp_tensor **victim, enum tp_leave *how)
{
	if (!pt_cands.n)
		return -ENOENT;
	*victim = pt_cands.t[0];
	*how = TP_LEAVE_OFFLOAD;
	return 0;
}

static int h_over_wait(void *priv, size_t need, uint64_t wait_bytes,
		       bool no_offload, struct tp_tensor **victim,
		       enum tp_leave *how)
{
	h.asked++;
	h.wait_bytes = wait_bytes;
	for (unsigned i = 0; h.any && i < pt_cands.n; i++)
		if (pt_cands.t[i]->resident_pages) {
			*victim = pt_cands.t[i];
			*how = TP_LEAVE_EVICT;
			return 0;
		}
	if (!h.instead || !h.instead->candidate)
		return -ENOENT;
	*victim = h.instead;
	*how = TP_LEAVE_EVICT;
	return 0;
}

static struct tp_tensor *written(struct tp_ctx *ctx)
{
	struct tp_tensor *t = tp_tensor_create(ctx, BYTES, 0);
	if (!t || !tp_tensor_acquire(ctx, t, TP_WRITE))
		bail_out("cannot write a tensor");
	tp_tensor_release(ctx, t);
	return t;
}

static bool back(struct tp_ctx *ctx, struct tp_tensor *t)
{
	bool good = tp_tensor_acquire(ctx, t, TP_READ) &&
		    t->resident_pages == 2;

	tp_tensor_release(ctx, t);
	return good;
}

/*
 * Fill the budget with a and b, send a out (its copy takes 131 ms of
 * virtual time at 0.001 GB/s), then ask for room for c.
 */
static void one(const char *what, bool hook, bool give)
{
	struct tp_victim_ops ops = {
		.add = pt_cand_add, .del = pt_cand_del, .touch = pt_cand_touch,
		.choose = h_choose,
		.choose_over_wait = hook ? h_over_wait : NULL,
	};
	struct tp_tensor *a, *b, *c;
	struct tp_ctx *ctx;
	uint64_t copy_ns, t0, stall0;

	/* Chunks held by deferred unmaps (ordered reuse hands them on). */
	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,"
			    "vmm.mapping=chunks,"
			    "pager.budget=256K,pager.high_watermark=100,"
			    "vmm.sim.bandwidth=0.001,"
			    "vmm.sim.copy_latency_ns=0,vmm.sim.map_ns=0,"
			    "vmm.sim.set_access_ns=0,vmm.sim.unmap_ns=0");
	if (!ctx)
		bail_out("tp_ctx_create(sim): %s", strerror(errno));
	memset(&h, 0, sizeof(h));
	pt_hooks_set(ctx, &ops);
	copy_ns = (uint64_t)BYTES * 1000;	/* 0.001 bytes per ns */

	a = written(ctx);
	b = written(ctx);
	if (tp_pager_offload(ctx->pager, a))
		bail_out("offload");
	h.instead = give ? b : NULL;
	t0 = tp_vmm_now_ns(ctx->vmm);
	stall0 = ctx->pager->c.stall_ns;
	c = tp_tensor_create(ctx, BYTES, 0);
	ok(c && tp_tensor_acquire(ctx, c, TP_WRITE), "%s: c fits", what);
	tp_tensor_release(ctx, c);
	if (!hook)
		ok(ctx->pager->c.stall_ns - stall0 == copy_ns &&
		   b->resident_pages == 2,
		   "%s: waited exactly the copy out (%" PRIu64 " ns), b stayed",
		   what, ctx->pager->c.stall_ns - stall0);
	else if (give)
		ok(h.asked == 1 && h.wait_bytes == BYTES &&
		   ctx->pager->c.stall_ns == stall0 &&
		   tp_vmm_now_ns(ctx->vmm) - t0 < copy_ns &&
		   b->evicted_pages == 2,
		   "%s: told %" PRIu64 " bytes to wait for, evicted b at once",
		   what, h.wait_bytes);
	else
		ok(h.asked >= 1 && h.wait_bytes == BYTES &&
		   ctx->pager->c.stall_ns - stall0 == copy_ns &&
		   b->resident_pages == 2,
		   "%s: refused, so waited the copy out", what);
	ok(back(ctx, a) && back(ctx, b) && pt_regens == (give ? 1u : 0u),
	   "%s: a reloaded, b %s", what, give ? "regenerated" : "resident");
	tp_ctx_destroy(ctx);
}

/*
 * Fill the budget with a, b, c and d, send a out, queue 10 ms of compute,
 * then ask for room for e: the hook would give every candidate.
 */
static void busy(void)
{
	struct tp_victim_ops ops = {
		.add = pt_cand_add, .del = pt_cand_del, .touch = pt_cand_touch,
		.choose = h_choose, .choose_over_wait = h_over_wait,
	};
	const uint64_t op_ns = 10000000;
	struct tp_tensor *t[4], *e;
	struct tp_ctx *ctx;
	uint64_t copy_ns = (uint64_t)BYTES * 1000, stall0;
	unsigned evicted = 0;

	ctx = tp_ctx_create("vmm.backend=sim,vmm.chunk_size=64K,"
			    "vmm.mapping=chunks,"
			    "pager.budget=512K,pager.high_watermark=100,"
			    "vmm.sim.bandwidth=0.001,"
			    "vmm.sim.copy_latency_ns=0,vmm.sim.map_ns=0,"
			    "vmm.sim.set_access_ns=0,vmm.sim.unmap_ns=0");
	if (!ctx)
		bail_out("tp_ctx_create(sim): %s", strerror(errno));
	memset(&h, 0, sizeof(h));
	h.any = true;
	pt_hooks_set(ctx, &ops);

	for (unsigned i = 0; i < 4; i++)
		t[i] = written(ctx);
	if (tp_pager_offload(ctx->pager, t[0]) ||
	    tp_vmm_launch(ctx->vmm, TP_STREAM_COMPUTE, op_ns, NULL, NULL))
		bail_out("offload, launch");
	stall0 = ctx->pager->c.stall_ns;
	e = tp_tensor_create(ctx, BYTES, 0);
	ok(e && tp_tensor_acquire(ctx, e, TP_WRITE), "busy: e fits");
	tp_tensor_release(ctx, e);
	for (unsigned i = 1; i < 4; i++)
		evicted += t[i]->evicted_pages == 2;
	ok(h.asked == 1 && evicted == 1,
	   "busy: asked once, one victim of three candidates evicted (%u, asked %u times)",
	   evicted, h.asked);
	ok(ctx->pager->c.stall_ns - stall0 == op_ns,
	   "busy: waited for the compute (%" PRIu64 " ns), not the copy (%" PRIu64 " ns)",
	   ctx->pager->c.stall_ns - stall0, copy_ns);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	plan_tests(12);
	one("no hook", false, false);
	one("hook refuses", true, false);
	one("hook gives a victim", true, true);
	busy();
	return exit_status();
}
