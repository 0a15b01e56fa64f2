/* SPDX-License-Identifier: MIT */
/*
 * The victim-ops contract as a policy sees it: candidates offered and
 * withdrawn, choose() obeyed, every acquire and free announced, the
 * watermark asked through release_bytes, prefetch picks issued and each
 * answered exactly once, recompute_back honoured, copies reported.
 */
#include "config.h"

#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"

#define MAXC 64

static struct {
	struct tp_tensor *cand[MAXC];
	unsigned ncand;
	unsigned adds, dels, chooses, acquires, forgets, copies_d2h, copies_h2d;
	uint64_t release;		/* what release_bytes answers */
	unsigned release_asked;
	struct tp_tensor *pick;		/* what prefetch_pick answers once */
	int ahead_rc;			/* what choose_ahead answers */
	unsigned aheads;
	const struct tp_tensor *ahead_of;
	unsigned picked, done_ok, done_fail;
	bool back;			/* what recompute_back answers */
	unsigned regens;
} h;

static void h_add(void *priv, struct tp_tensor *t)
{
	h.adds++;
	h.cand[h.ncand++] = t;
}

static void h_del(void *priv, struct tp_tensor *t)
{
	h.dels++;
	for (unsigned i = 0; i < h.ncand; i++)
		if (h.cand[i] == t) {
			h.cand[i] = h.cand[--h.ncand];
			return;
		}
	diag("del of a tensor never added");
}

static void h_touch(void *priv, struct tp_tensor *t)
{
}

/* Oldest-created first: the lowest id leaves. */
static int h_choose(void *priv, size_t need, bool no_offload,
		    struct tp_tensor **victim, enum tp_leave *how)
{
	struct tp_tensor *best = NULL;

	h.chooses++;
	for (unsigned i = 0; i < h.ncand; i++)
		if (!best || h.cand[i]->id < best->id)
			best = h.cand[i];
	if (!best)
		return -ENOENT;
	*victim = best;
	*how = TP_LEAVE_OFFLOAD;
	return 0;
}

/* Room ahead of a prefetch: as choose(), unless told to refuse. */
static int h_choose_ahead(void *priv, const struct tp_tensor *ahead_of,
			  size_t need, bool no_offload,
			  struct tp_tensor **victim, enum tp_leave *how)
{
	h.aheads++;
	h.ahead_of = ahead_of;
	if (h.ahead_rc)
		return h.ahead_rc;
	return h_choose(priv, need, no_offload, victim, how);
}

static void h_copy_done(void *priv, bool d2h, uint64_t bytes, uint64_t ns)
{
	if (d2h)
		h.copies_d2h++;
	else
		h.copies_h2d++;
}

static void h_on_acquire(void *priv, struct tp_tensor *t)
{
	h.acquires++;
}

static void h_forget(void *priv, struct tp_tensor *t)
{
	h.forgets++;
}

static uint64_t h_release(void *priv, uint64_t used, uint64_t budget)
{
	h.release_asked++;
	return h.release;
}

static size_t h_pick(void *priv, struct tp_tensor **out, size_t max)
{
	if (!h.pick)
		return 0;
	out[0] = h.pick;
	h.pick = NULL;
	h.picked++;
	return 1;
}

static void h_done(void *priv, struct tp_tensor *t, bool ok)
{
	if (ok)
		h.done_ok++;
	else
		h.done_fail++;
}

static bool h_back(void *priv, const struct tp_tensor *t)
{
	return h.back;
}

static const struct tp_victim_ops ops = {
	.add = h_add, .del = h_del, .touch = h_touch, .choose = h_choose,
	.choose_ahead = h_choose_ahead,
	.copy_done = h_copy_done, .on_acquire = h_on_acquire,
	.forget = h_forget, .release_bytes = h_release,
	.prefetch_pick = h_pick, .prefetch_done = h_done,
	.recompute_back = h_back,
};

static bool r_can(void *priv, const struct tp_tensor *t)
{
	return t->computable;
}

static int r_regen(void *priv, struct tp_tensor *t)
{
	void *addr;
	int ret = tp_pager_acquire(priv, t, 0, t->bytes,
				   TP_WRITE | TP_ACQ_NO_REGEN, &addr);

	if (!ret)
		tp_pager_release(priv, t, 0, t->bytes);
	h.regens++;
	return ret;
}

static bool r_on_free(void *priv, struct tp_tensor *t)
{
	return false;
}

int main(void)
{
	struct tp_regen_ops regen = {
		.can_regenerate = r_can, .regenerate = r_regen,
		.on_free = r_on_free,
	};
	struct tp_tensor *t[4], *c, *d, *e;
	size_t held;
	struct tp_pager *pg;
	struct tp_ctx *ctx;
	size_t chunk;

	pt_probe();
	plan_tests(21);
	ctx = pt_ctx("pager.budget=8C");
	pg = ctx->pager;
	chunk = pt_chunk(ctx);
	tp_pager_set_victim_ops(pg, &ops);
	regen.priv = pg;
	tp_pager_set_regen_ops(pg, &regen);

	for (int i = 0; i < 4; i++) {
		t[i] = tp_tensor_create(ctx, 2 * chunk, 0);
		if (!tp_tensor_acquire(ctx, t[i], TP_WRITE))
			bail_out("acquire");
		tp_tensor_release(ctx, t[i]);
	}
	ok(h.acquires == 4 && h.ncand == 4, "4 acquires announced, 4 candidates (%u, %u)",
	   h.acquires, h.ncand);
	ok(h.release_asked == 4, "the watermark asked release_bytes each time (%u)",
	   h.release_asked);

	/* Budget full: a new tensor makes the oldest leave, by choose(). */
	c = tp_tensor_create(ctx, chunk, 0);
	ok(tp_tensor_acquire(ctx, c, TP_WRITE) != NULL, "a fifth tensor fits");
	ok(t[0]->resident_pages == 0 && t[1]->resident_pages == 2,
	   "choose() was obeyed: the oldest left");
	tp_tensor_release(ctx, c);

	/* release_bytes drives proactive release after an allocation. */
	h.release = 2 * chunk;
	d = tp_tensor_create(ctx, chunk, 0);
	ok(tp_tensor_acquire(ctx, d, TP_WRITE) != NULL, "a sixth tensor fits");
	tp_tensor_release(ctx, d);
	h.release = 0;
	tp_sync(ctx);
	ok(t[1]->resident_pages == 0 && t[2]->resident_pages == 2,
	   "release_bytes of 2 chunks sent the next oldest away");
	ok(h.copies_d2h == 2, "both offloads reported as copies (%u)", h.copies_d2h);

	/* A pick is issued and answered once, when its pages are back. */
	h.pick = t[0];
	tp_tensor_acquire(ctx, c, TP_READ);
	tp_tensor_release(ctx, c);
	ok(h.picked == 1 && t[0]->inflight_pages + t[0]->resident_pages == 2,
	   "the picked tensor is on its way back");
	tp_sync(ctx);
	ok(h.done_ok == 1 && h.done_fail == 0 && t[0]->resident_pages == 2,
	   "prefetch_done(ok) once it landed");
	ok(h.copies_h2d == 1, "the reload reported as a copy");

	/* A pick of a tensor with nothing in swap is answered at once. */
	h.pick = t[3];
	tp_tensor_acquire(ctx, c, TP_READ);
	tp_tensor_release(ctx, c);
	ok(h.done_ok == 2 && h.done_fail == 0, "resident pick answered at once");

	/* recompute_back: an offloaded computable tensor is regenerated. */
	t[1]->computable = true;
	h.back = true;
	ok(tp_tensor_acquire(ctx, t[1], TP_READ) != NULL && h.regens == 1,
	   "recompute_back: regenerated instead of reloaded (%u)", h.regens);
	ok(h.copies_h2d == 1, "no reload copy for it");
	tp_tensor_release(ctx, t[1]);
	h.back = false;

	/*
	 * A pick that does not fit: room is asked of choose_ahead for it
	 * (never taking the picked tensor itself); refused, nothing moves
	 * and the pick is answered not done.
	 */
	tp_sync(ctx);
	ok_rc(tp_pager_offload(pg, t[3]), "offload t[3]");
	tp_sync(ctx);
	tp_vmm_reap(ctx->vmm);
	e = tp_tensor_create(ctx, tp_vmm_chunks_free(ctx->vmm) * chunk, 0);
	ok(e && tp_tensor_acquire(ctx, e, TP_WRITE) && !tp_tensor_release(ctx, e) &&
	   tp_vmm_chunks_free(ctx->vmm) == 0, "the budget is full");
	held = pg->held;
	h.ahead_rc = -ENOENT;
	h.pick = t[3];
	tp_tensor_acquire(ctx, c, TP_READ);
	tp_tensor_release(ctx, c);
	ok(h.aheads >= 1 && h.ahead_of == t[3] && h.done_fail == 1 &&
	   t[3]->resident_pages == 0 && pg->held == held,
	   "no victim ahead of need: nothing moved, the pick answered not done");
	/* The victim's chunks come back once its copy is done: a prefetch
	 * never waits for them, the next chance finds them. */
	h.ahead_rc = 0;
	for (int i = 0; i < 2 && !t[3]->resident_pages; i++) {
		h.pick = t[3];
		tp_tensor_acquire(ctx, c, TP_READ);
		tp_tensor_release(ctx, c);
		tp_sync(ctx);
	}
	ok(t[3]->resident_pages == 2 && h.done_ok == 3,
	   "a victim needed later made room: t[3] came back (%u asked)",
	   h.aheads);
	tp_tensor_free(ctx, e);

	/* Frees are announced; candidates withdrawn. */
	for (int i = 0; i < 4; i++)
		tp_tensor_free(ctx, t[i]);
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, d);
	ok(h.forgets == 7, "7 frees announced (%u)", h.forgets);
	ok(h.ncand == 0, "no candidate left behind (%u)", h.ncand);
	ok(h.adds >= h.dels && h.adds - h.dels == h.ncand, "adds and dels balance");

	/* Restoring the default drops every optional hook. */
	tp_pager_set_victim_ops(pg, NULL);
	ok(!pg->victim.on_acquire && !pg->victim.prefetch_pick &&
	   !pg->victim.forget && !pg->victim.release_bytes,
	   "the default LRU keeps none of the hooks");
	tp_ctx_destroy(ctx);
	return exit_status();
}
