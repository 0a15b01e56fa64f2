/* SPDX-License-Identifier: MIT */
/*
 * The prefetcher: after one recorded iteration, the next one's tensors
 * (new ones, with new ids) are predicted in the recorded order of use;
 * at most policy.prefetch.depth are in flight; a tensor is brought back
 * when its use is due (within twice its reload time), never skipping
 * ahead of a sooner use that is not; tensors cheaper to recompute are
 * left alone (DELTA §5.5); tensors that live across iterations are
 * predicted at their first use; a regeneration's acquisitions do not move
 * the cursor; an iteration that wastes more prefetches than it uses stops
 * prefetching; and issued / hits / late / wasted are counted.
 *
 * One file, past the usual length: every case drives the one recorder
 * and replayer through the same few helpers, one iteration after another.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "ctx/ctx.h"
#include "policy/policy.h"
#include "policy/prefetch.h"
#include "tap.h"
#include "tests/policy-testenv.h"

#define NT 10
#define CHUNK 4096

static struct tp_ctx ctx;
static struct tp_policy *pol;

static void init_tensor(struct tp_tensor *t, uint64_t id)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->bytes = 2 * CHUNK;
	t->nr_pages = t->resident_pages = 2;
	t->computable = true;
	t->pol.idx = -1;
	/* Recompute costs far more than a reload: prefetch is worth it. */
	cost[id] = 1e9;
}

/* One acquisition, 100 ns after the previous one. */
static void acquire(struct tp_tensor *t)
{
	now += 100;
	t->last_access_ns = now;
	tp_policy_on_acquire(pol, t);
	t->resident_pages = t->nr_pages;
}

/* Forward over @t[0..NT), then backward in reverse. */
static void forward(struct tp_tensor *t)
{
	for (int i = 0; i < NT; i++)
		acquire(&t[i]);
}

static void backward(struct tp_tensor *t)
{
	for (int i = NT - 1; i >= 0; i--)
		acquire(&t[i]);
}

static size_t pick(struct tp_tensor **out)
{
	return tp_policy_prefetch_pick(pol, out, 8);
}

/* A fresh policy on the test's clock and costs, in pol. */
static void new_policy(void)
{
	pol = pt_policy(&ctx, true);
}

/*
 * Acquisitions the record does not have (a recompute's replays, a new
 * tensor) must not shift the predictions, and steps of the record this
 * iteration skips must be caught up with.
 */
static void resync(void)
{
	struct tp_tensor a[NT], c[NT], d[NT], x, *out[8];
	size_t n;

	new_policy();
	tp_conf_set(&ctx.conf, "policy.prefetch.depth", "2", "test", 0);

	for (int i = 0; i < NT; i++)
		init_tensor(&a[i], 31 + i);
	tp_policy_iteration_begin(pol);
	forward(a);
	backward(a);
	tp_policy_iteration_end(pol);

	/* c: the forward pass replays c[2] and makes x, not in the record */
	for (int i = 0; i < NT; i++)
		init_tensor(&c[i], 41 + i);
	init_tensor(&x, 51);
	x.bytes = CHUNK;
	x.nr_pages = x.resident_pages = 1;
	tp_policy_iteration_begin(pol);
	for (int i = 0; i < 5; i++)
		acquire(&c[i]);
	acquire(&c[2]);
	acquire(&x);
	for (int i = 5; i < NT; i++)
		acquire(&c[i]);
	for (int i = 0; i < 8; i++)
		c[i].resident_pages = 0;
	n = pick(out);
	ok(n == 2 && out[0] == &c[7] && out[1] == &c[6],
	   "extra acquisitions in the forward pass: still c[7], c[6]");
	/* the pager marks the pages resident, then answers */
	c[7].resident_pages = c[6].resident_pages = 2;
	tp_policy_prefetch_done(pol, &c[7], true);
	tp_policy_prefetch_done(pol, &c[6], true);
	acquire(&c[9]);
	acquire(&c[8]);
	acquire(&c[1]);		/* a replay: c[1] is used later too */
	acquire(&c[7]);
	acquire(&c[6]);
	n = pick(out);
	ok(n == 2 && out[0] == &c[5] && out[1] == &c[4],
	   "a replay in the backward pass does not move the cursor: c[5], c[4]");
	tp_policy_prefetch_done(pol, &c[5], false);
	tp_policy_prefetch_done(pol, &c[4], false);
	for (int i = 5; i >= 0; i--)
		acquire(&c[i]);
	tp_policy_iteration_end(pol);

	/* d skips the replay and x that the record (iteration c) has */
	for (int i = 0; i < NT; i++)
		init_tensor(&d[i], 61 + i);
	tp_policy_iteration_begin(pol);
	forward(d);
	for (int i = 0; i < 8; i++)
		d[i].resident_pages = 0;
	/*
	 * d[5] (not x, whose size differs) took c[5]'s place: the record
	 * now predicts d[1] (c[1]'s replay), then d[7] down to d[0].
	 */
	tp_conf_set(&ctx.conf, "policy.prefetch.depth", "8", "test", 0);
	n = pick(out);
	ok(n == 8 && out[0] == &d[1] && out[1] == &d[7] && out[2] == &d[6] &&
	   out[3] == &d[5] && out[4] == &d[4] && out[5] == &d[3] &&
	   out[6] == &d[2] && out[7] == &d[0],
	   "steps of the record that did not happen are skipped: d[1], d[7]..d[0]");
	for (size_t i = 0; i < n; i++)
		tp_policy_prefetch_done(pol, out[i], false);
	tp_policy_iteration_end(pol);
	tp_policy_destroy(pol);
}

/* One acquisition straight into the prefetcher: @replay by a regeneration. */
static void pf_acquire(struct tp_prefetch *pf, struct tp_tensor *t,
		       bool replay)
{
	/* A replay's time is lost time: the policy's clock leaves it out. */
	if (!replay)
		now += 100;
	tp_prefetch_on_acquire(pf, t, now, now, replay);
}

/*
 * A regeneration's acquisitions are not the program's: a long replay
 * chain in one iteration (longer than the resync window) and none in the
 * next keep the cursor on the program's own sequence, and a tensor's next
 * use is its next use by the program.
 */
static void replays_unrecorded(void)
{
	struct tp_prefetch *pf = tp_prefetch_create();
	struct tp_prefetch_stats st;
	struct tp_tensor a[NT], b[NT];

	for (int i = 0; i < NT; i++) {
		init_tensor(&a[i], 71 + i);
		init_tensor(&b[i], 81 + i);
	}
	tp_prefetch_iteration_begin(pf, now);
	ok(!tp_prefetch_predicting(pf), "first iteration: nothing to predict from");
	for (int i = 0; i < NT; i++)
		pf_acquire(pf, &a[i], false);
	for (int i = NT - 1; i >= 5; i--)
		pf_acquire(pf, &a[i], false);
	/* regenerating a[4] replays a[0..4] four times over */
	for (int r = 0; r < 4 * TP_PREFETCH_RESYNC; r++)
		pf_acquire(pf, &a[r % 5], true);
	for (int i = 4; i >= 0; i--)
		pf_acquire(pf, &a[i], false);
	tp_prefetch_iteration_end(pf, now);
	tp_prefetch_get_stats(pf, &st);
	ok(st.recorded == 2 * NT, "replays are not the program's steps: %llu",
	   (unsigned long long)st.recorded);

	/* the next iteration replays nothing */
	tp_prefetch_iteration_begin(pf, now);
	ok(tp_prefetch_predicting(pf), "second iteration: predicting");
	for (int i = 0; i < NT; i++)
		pf_acquire(pf, &b[i], false);
	for (int i = NT - 1; i >= 5; i--)
		pf_acquire(pf, &b[i], false);
	ok(tp_prefetch_next_use_ns(pf, &b[4]) == 100 &&
	   tp_prefetch_next_use_ns(pf, &b[0]) == 500,
	   "after b[5]: b[4] next (%llu ns), b[0] last (%llu ns)",
	   (unsigned long long)tp_prefetch_next_use_ns(pf, &b[4]),
	   (unsigned long long)tp_prefetch_next_use_ns(pf, &b[0]));
	pf_acquire(pf, &b[4], false);
	pf_acquire(pf, &b[3], false);
	ok(tp_prefetch_next_use_ns(pf, &b[2]) == 100 &&
	   tp_prefetch_next_use_ns(pf, &b[4]) == UINT64_MAX,
	   "the cursor follows: b[2] next (%llu), b[4] done with (%llu)",
	   (unsigned long long)tp_prefetch_next_use_ns(pf, &b[2]),
	   (unsigned long long)tp_prefetch_next_use_ns(pf, &b[4]));
	tp_prefetch_get_stats(pf, &st);
	ok(st.predicted == NT + 7, "every program step matched: %llu",
	   (unsigned long long)st.predicted);
	tp_prefetch_iteration_end(pf, now);
	tp_prefetch_destroy(pf);
}

/*
 * One iteration of the forward over @t and the backward, then @late
 * replays of t[2] after the program's last use of it, told whether it
 * thrashed.
 */
static void late_iteration(struct tp_prefetch *pf, struct tp_tensor *t,
			   int late, bool thrashed)
{
	tp_prefetch_iteration_begin(pf, now);
	for (int i = 0; i < NT; i++)
		pf_acquire(pf, &t[i], false);
	for (int i = NT - 1; i >= 0; i--)
		pf_acquire(pf, &t[i], false);
	for (int r = 0; r < late; r++) {
		pf_acquire(pf, &t[2], true);
		pf_acquire(pf, &t[3], true);
	}
	tp_prefetch_thrashed(pf, thrashed);
	tp_prefetch_iteration_end(pf, now);
}

/*
 * A tensor the program is done with, that regenerations of what was made
 * from it acquired again, is not free to leave: learnt only from an
 * iteration that followed a record and thrashed, kept across iterations
 * that do not regenerate it (by then it is kept), and only for it.
 */
static void regen_late(void)
{
	struct tp_prefetch *pf = tp_prefetch_create();
	struct tp_tensor t[6][NT];
	bool first, ok_b, calm, kept, other;

	for (int k = 0; k < 6; k++)
		for (int i = 0; i < NT; i++)
			init_tensor(&t[k][i], 4 + 20 * k + i);
	/* a first iteration teaches nothing: it followed no record */
	late_iteration(pf, t[0], 3, true);
	tp_prefetch_iteration_begin(pf, now);
	pf_acquire(pf, &t[1][0], false);
	pf_acquire(pf, &t[1][1], false);
	pf_acquire(pf, &t[1][2], false);
	first = tp_prefetch_regen_late(pf, &t[1][2]);
	tp_prefetch_iteration_end(pf, now);
	/* one that did not thrash teaches nothing either */
	late_iteration(pf, t[2], 3, false);
	tp_prefetch_iteration_begin(pf, now);
	for (int i = 0; i < 3; i++)
		pf_acquire(pf, &t[3][i], false);
	calm = tp_prefetch_regen_late(pf, &t[3][2]);
	tp_prefetch_iteration_end(pf, now);
	/* predicted and thrashed: t[2] and t[3] are late */
	late_iteration(pf, t[3], 3, true);
	tp_prefetch_iteration_begin(pf, now);
	for (int i = 0; i < 5; i++)
		pf_acquire(pf, &t[4][i], false);
	ok_b = tp_prefetch_regen_late(pf, &t[4][2]) &&
	       tp_prefetch_regen_late(pf, &t[4][3]);
	other = tp_prefetch_regen_late(pf, &t[4][1]) ||
		tp_prefetch_regen_late(pf, &t[4][4]);
	for (int i = 5; i < NT; i++)
		pf_acquire(pf, &t[4][i], false);
	for (int i = NT - 1; i >= 0; i--)
		pf_acquire(pf, &t[4][i], false);
	tp_prefetch_thrashed(pf, false);
	tp_prefetch_iteration_end(pf, now);
	/* an iteration that kept them and regenerated none: still late */
	tp_prefetch_iteration_begin(pf, now);
	for (int i = 0; i < 3; i++)
		pf_acquire(pf, &t[5][i], false);
	kept = tp_prefetch_regen_late(pf, &t[5][2]);
	tp_prefetch_iteration_end(pf, now);

	ok(!first && !calm,
	   "regenerated after its last use: nothing learnt from a first iteration (%d) nor one that did not thrash (%d)",
	   first, calm);
	ok(ok_b && !other,
	   "after a predicted iteration that thrashed: those regenerated late are late (%d), others not (%d)",
	   ok_b, other);
	ok(kept, "remembered through an iteration that kept them");
	tp_prefetch_destroy(pf);
}

/* The forward over @t[0..2 NT), each tensor offloaded after its use. */
static void forward_offloaded(struct tp_prefetch *pf, struct tp_tensor *t)
{
	for (int i = 0; i < 2 * NT; i++) {
		pf_acquire(pf, &t[i], false);
		t[i].resident_pages = 0;
	}
}

/*
 * A record that no longer holds: every tensor prefetched leaves again
 * unused. After TP_PREFETCH_WASTE_MIN such, more than were used, the
 * iteration prefetches no more (the rest of it would thrash: each copy
 * takes room what is needed sooner had), and the next one tries again.
 */
static void halts_when_wasted(void)
{
	const struct tp_prefetch_room room = { .chunk = CHUNK,
					       .bytes_per_ns = 1e-6 };
	struct tp_prefetch *pf = tp_prefetch_create();
	struct tp_tensor a[2 * NT], b[2 * NT], c[2 * NT], *out[4];
	struct tp_prefetch_stats st;
	unsigned issued = 0, rounds = 0;
	size_t n;

	for (int i = 0; i < 2 * NT; i++) {
		init_tensor(&a[i], i);
		init_tensor(&b[i], 2 * NT + i);
		init_tensor(&c[i], 4 * NT + i);
	}
	/* the record: forward, then backward */
	tp_prefetch_iteration_begin(pf, now);
	for (int i = 0; i < 2 * NT; i++)
		pf_acquire(pf, &a[i], false);
	for (int i = 2 * NT - 1; i >= 0; i--)
		pf_acquire(pf, &a[i], false);
	tp_prefetch_iteration_end(pf, now);

	/* forward, each offloaded after its use; what is prefetched for
	 * the backward leaves before it comes */
	tp_prefetch_iteration_begin(pf, now);
	forward_offloaded(pf, b);
	while ((n = tp_prefetch_pick(pf, out, 4, 4, &room, NULL, NULL)) &&
	       rounds++ < 4 * NT) {
		for (size_t k = 0; k < n; k++) {
			out[k]->resident_pages = out[k]->nr_pages;
			tp_prefetch_done(pf, out[k], true);
			/* left again, unused */
			out[k]->resident_pages = 0;
			tp_prefetch_left(pf, out[k]);
		}
		issued += (unsigned)n;
	}
	tp_prefetch_get_stats(pf, &st);
	ok(st.halted == 1 && st.wasted == issued &&
	   issued >= TP_PREFETCH_WASTE_MIN &&
	   issued < TP_PREFETCH_WASTE_MIN + 4,
	   "wasted prefetches halt the iteration's: %u issued, %llu wasted, halted %llu",
	   issued, (unsigned long long)st.wasted,
	   (unsigned long long)st.halted);
	for (int i = 2 * NT - 1; i >= 0; i--)
		pf_acquire(pf, &b[i], false);
	tp_prefetch_iteration_end(pf, now);

	/* the next iteration follows its record again: prefetches resume */
	tp_prefetch_iteration_begin(pf, now);
	forward_offloaded(pf, c);
	n = tp_prefetch_pick(pf, out, 4, 4, &room, NULL, NULL);
	ok(n > 0, "the next iteration prefetches again (%zu)", n);
	for (size_t k = 0; k < n; k++)
		tp_prefetch_done(pf, out[k], false);
	tp_prefetch_iteration_end(pf, now);
	tp_prefetch_destroy(pf);
}

/*
 * A tensor that lives across iterations (a parameter) is predicted at its
 * first use of the next iteration; the predictions order victims for
 * room made ahead of need (choose_ahead).
 */
static void across_iterations(void)
{
	struct tp_tensor p, a[4], b[4], unknown, *out[8], *v;
	const struct tp_victim_ops *ops;
	enum tp_leave how;
	size_t n;

	new_policy();
	ops = tp_policy_victim_ops(pol);
	init_tensor(&p, 71);
	init_tensor(&unknown, 80);
	for (int i = 0; i < 4; i++) {
		init_tensor(&a[i], 72 + i);
		init_tensor(&b[i], 76 + i);
	}
	tp_policy_iteration_begin(pol);
	acquire(&p);
	for (int i = 0; i < 4; i++)
		acquire(&a[i]);
	for (int i = 3; i >= 0; i--)
		acquire(&a[i]);
	acquire(&p);
	tp_policy_iteration_end(pol);
	for (int i = 0; i < 4; i++)
		tp_policy_forget(pol, &a[i]);	/* freed with their batch */

	tp_policy_iteration_begin(pol);
	p.resident_pages = 0;
	n = pick(out);
	ok(n == 1 && out[0] == &p,
	   "a parameter offloaded last iteration is prefetched for its first use");
	tp_policy_prefetch_done(pol, &p, false);
	acquire(&p);
	for (int i = 0; i < 4; i++)
		acquire(&b[i]);
	ok(tp_policy_used_after(pol, &b[0], &b[3]) &&
	   !tp_policy_used_after(pol, &b[3], &b[0]) &&
	   tp_policy_used_after(pol, &p, &b[0]) &&
	   !tp_policy_used_after(pol, &unknown, &b[0]),
	   "next uses ordered from the record: b[3], b[2], b[1], b[0], p; "
	   "an unknown tensor is not after anything");

	/* Room ahead of a prefetch of b[3]: b[0], needed after it, may
	 * leave; for b[0], b[3] may not. A proactive release only offloads. */
	tp_conf_set(&ctx.conf, "policy.director", "offload", "test", 0);
	ops->add(ops->priv, &b[0]);
	ok(ops->choose_ahead(ops->priv, &b[3], 1, false, &v, &how) == 0 &&
	   v == &b[0], "room for b[3]'s prefetch: b[0] leaves");
	ops->add(ops->priv, &b[0]);
	ops->del(ops->priv, &b[0]);
	ops->add(ops->priv, &b[3]);
	ok(ops->choose_ahead(ops->priv, &b[0], 1, false, &v, &how) == -ENOENT,
	   "room for b[0]'s prefetch: b[3], needed sooner, stays");
	ok(ops->choose_ahead(ops->priv, NULL, 1, false, &v, &how) == -ENOENT,
	   "a proactive release leaves b[3] alone: used in 100 ns, it has "
	   "no time to go and come back (2 x 731 ns)");
	tp_conf_set(&ctx.conf, "policy.link_bandwidth", "10000", "test", 0);
	ok(ops->choose_ahead(ops->priv, NULL, 1, false, &v, &how) == 0 &&
	   v == &b[3] && how == TP_LEAVE_OFFLOAD,
	   "on a 10 TB/s link it has: offloaded ahead of need");
	tp_conf_set(&ctx.conf, "policy.link_bandwidth", "32", "test", 0);
	ops->add(ops->priv, &b[3]);
	tp_conf_set(&ctx.conf, "policy.director", "evict", "test", 0);
	ok(ops->choose_ahead(ops->priv, NULL, 1, false, &v, &how) == -ENOENT,
	   "but does not evict ahead of need");
	ops->del(ops->priv, &b[3]);
	tp_conf_set(&ctx.conf, "policy.director", "delta", "test", 0);
	tp_policy_iteration_end(pol);
	tp_policy_destroy(pol);
}

/*
 * One pass's tensors from @id on: @t[0..NT), and @once of 3 chunks, a
 * size no other has, so that the record names it apart.
 */
static void init_pass(struct tp_tensor *t, struct tp_tensor *once,
		      uint64_t id)
{
	for (int i = 0; i < NT; i++)
		init_tensor(&t[i], id + i);
	init_tensor(once, id + NT);
	once->bytes = 3 * CHUNK;
	once->nr_pages = once->resident_pages = 3;
}

/*
 * The overlap filter: x/(m*d). At the end of the forward pass, b[NT-1] is
 * used next and b[0] last; all cost the same to leave, so the farthest
 * next use (b[0]) goes first. A tensor made in this iteration that the
 * record does not use again goes before any of them, and is dropped, not
 * copied, however costly its recompute. No release ahead of need.
 */
static void overlap_filter(void)
{
	struct tp_tensor a[NT], b[NT], once, dead;
	const struct tp_victim_ops *ops;
	struct tp_tensor *v = NULL;
	enum tp_leave how = TP_LEAVE_OFFLOAD;

	new_policy();
	tp_conf_set(&ctx.conf, "policy.filter", "overlap", "test", 0);
	tp_conf_set(&ctx.conf, "policy.director", "delta-overlap", "test", 0);
	ops = tp_policy_victim_ops(pol);
	init_pass(a, &once, 61);
	tp_policy_iteration_begin(pol);
	forward(a);
	acquire(&once);		/* used once, at the end of forward */
	backward(a);
	tp_policy_iteration_end(pol);

	init_pass(b, &dead, 81);
	tp_policy_iteration_begin(pol);
	forward(b);
	for (int i = 0; i < NT; i++)
		ops->add(ops->priv, &b[i]);
	ok(ops->choose(ops->priv, CHUNK, false, &v, &how) == 0 &&
	   v == &b[0] && how == TP_LEAVE_OFFLOAD,
	   "overlap: the farthest next use leaves first, offloaded "
	   "(chose id %llu)", v ? (unsigned long long)v->id : 0ull);

	/* once's counterpart: not used again in this iteration */
	acquire(&dead);
	ops->add(ops->priv, &dead);
	v = NULL;
	ok(ops->choose(ops->priv, CHUNK, false, &v, &how) == 0 &&
	   v == &dead && how == TP_LEAVE_EVICT,
	   "overlap: one not used again goes first, evicted (chose id %llu)",
	   v ? (unsigned long long)v->id : 0ull);
	ok(tp_policy_release_bytes(pol, 100 * CHUNK, 100 * CHUNK) == 0,
	   "overlap: no release ahead of need, even at the budget");
	for (int i = 0; i < NT; i++)
		ops->del(ops->priv, &b[i]);
	ops->del(ops->priv, &dead);
	tp_policy_iteration_end(pol);
	tp_conf_set(&ctx.conf, "policy.filter", "delta", "test", 0);
	tp_conf_set(&ctx.conf, "policy.director", "delta", "test", 0);
	tp_policy_destroy(pol);
}

int main(void)
{
	struct tp_tensor a[NT], b[NT], *out[8];
	struct tp_prefetch_stats st;
	uint64_t start;
	size_t n;

	plan_tests(48);
	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	tp_conf_set(&ctx.conf, "vmm.chunk_size", "4096", "test", 0);
	tp_conf_set(&ctx.conf, "policy.prefetch.depth", "2", "test", 0);
	new_policy();

	/* Iteration 1: recorded, nothing to predict from yet. */
	for (int i = 0; i < NT; i++)
		init_tensor(&a[i], 1 + i);
	tp_policy_iteration_begin(pol);
	forward(a);
	a[0].resident_pages = 0;
	ok(pick(out) == 0, "first iteration: no prediction");
	backward(a);
	tp_policy_iteration_end(pol);

	/* Iteration 2: new tensors; the forward pass offloads b[0..7]. */
	for (int i = 0; i < NT; i++)
		init_tensor(&b[i], 21 + i);
	tp_policy_iteration_begin(pol);
	start = now;
	forward(b);

	/*
	 * delta-overlap reads the gap to the next use from the record: b[3]
	 * was used again at step 16, +1700 ns into iteration 1; we are at
	 * +1000, so 700 ns of compute (the link was idle) hide the reload.
	 * TSPLIT eq. 3: c_s = m/b + max(m/b - 700, 0), m/b = 8192/11.2.
	 */
	{
		const struct tp_victim_ops *ops = tp_policy_victim_ops(pol);
		double mb = 8192 / (32 * 0.35);
		double c_s = mb + (mb - 700 > 0 ? mb - 700 : 0);
		struct tp_tensor *v;
		enum tp_leave how1 = TP_LEAVE_OFFLOAD, how2 = TP_LEAVE_EVICT;

		tp_conf_set(&ctx.conf, "policy.director", "delta-overlap",
			    "test", 0);
		tp_conf_set(&ctx.conf, "policy.remap_ns", "0", "test", 0);
		ops->add(ops->priv, &b[3]);
		cost[b[3].id] = floor(c_s);
		ok(ops->choose(ops->priv, 1, false, &v, &how1) == 0 &&
		   how1 == TP_LEAVE_EVICT, "delta-overlap: c_r %.0f <= c_s %.2f evicts",
		   floor(c_s), c_s);
		cost[b[3].id] = ceil(c_s);
		ok(ops->choose(ops->priv, 1, false, &v, &how2) == 0 &&
		   how2 == TP_LEAVE_OFFLOAD,
		   "delta-overlap: c_r %.0f > c_s %.2f offloads (hidden 700 ns)",
		   ceil(c_s), c_s);
		ops->del(ops->priv, &b[3]);
		cost[b[3].id] = 1e9;
		tp_conf_set(&ctx.conf, "policy.director", "delta", "test", 0);
	}
	for (int i = 0; i < 8; i++)
		b[i].resident_pages = 0;

	n = pick(out);
	ok(n == 2 && out[0] == &b[7] && out[1] == &b[6],
	   "predicts b[7], b[6] next (b[9], b[8] are resident), depth 2");
	ok(pick(out) == 0, "depth 2 in flight: nothing more");
	b[7].resident_pages = 2;
	tp_policy_prefetch_done(pol, &b[7], true);
	n = pick(out);
	ok(n == 1 && out[0] == &b[5],
	   "one completed: the next predicted, b[5]");

	/* Backward: b[9], b[8] resident; b[7] prefetched and complete: hit.
	 * b[6] still in flight: late. */
	acquire(&b[9]);
	acquire(&b[8]);
	acquire(&b[7]);
	acquire(&b[6]);
	tp_policy_prefetch_stats(pol, &st);
	ok(st.issued == 3, "issued 3 (got %llu)",
	   (unsigned long long)st.issued);
	ok(st.hits == 1, "1 hit (got %llu)",
	   (unsigned long long)st.hits);
	ok(st.late == 1, "1 late (got %llu)",
	   (unsigned long long)st.late);
	tp_policy_prefetch_done(pol, &b[6], true);

	/* b[5] completes but leaves again before use: wasted. */
	b[5].resident_pages = 2;
	tp_policy_prefetch_done(pol, &b[5], true);
	{
		const struct tp_victim_ops *ops = tp_policy_victim_ops(pol);
		struct tp_tensor *v;
		enum tp_leave how;

		ops->add(ops->priv, &b[5]);
		ok(ops->choose(ops->priv, 1, false, &v, &how) == 0 &&
		   v == &b[5], "the prefetched tensor is chosen to leave");
		ops->del(ops->priv, &b[5]);
		b[5].resident_pages = 0;
	}
	tp_policy_prefetch_stats(pol, &st);
	ok(st.wasted == 1, "1 wasted (got %llu)",
	   (unsigned long long)st.wasted);

	/*
	 * Due: the next use within TP_PREFETCH_DUE_SLACK times the reload
	 * (copy queued behind those in flight, plus remapping), plus the
	 * time to the next acquisition, the next chance to issue it. We are
	 * at step 13 (+1400 ns); b[5] is used at step 14 (+100 ns), b[4] at
	 * 15 (+200 ns). On a 10 TB/s link an 8 KiB reload takes 2.3 ns: b[5]
	 * is due (issued at step 14 it would be late), b[4] is not.
	 */
	tp_conf_set(&ctx.conf, "policy.link_bandwidth", "10000", "test", 0);
	n = pick(out);
	ok(n == 1 && out[0] == &b[5],
	   "a fast link: b[5], used at the next acquisition, is due; b[4] "
	   "200 ns ahead is not (got %zu)", n);
	tp_policy_prefetch_done(pol, &b[5], false);
	tp_conf_set(&ctx.conf, "policy.remap_ns", "100", "test", 0);
	n = pick(out);
	ok(n == 2 && out[0] == &b[5] && out[1] == &b[4],
	   "mapping 2 chunks back at 100 ns each makes b[5] and b[4] due");
	tp_policy_prefetch_done(pol, &b[5], false);	/* not issued */
	tp_policy_prefetch_done(pol, &b[4], false);
	tp_conf_set(&ctx.conf, "policy.remap_ns", "0", "test", 0);
	tp_conf_set(&ctx.conf, "policy.link_bandwidth", "32", "test", 0);
	n = pick(out);
	ok(n == 2 && out[0] == &b[5],
	   "refused for want of room: proposed again at the next chance");
	tp_policy_prefetch_done(pol, &b[4], false);
	/* Answered done with its pages still not back (they were not in host
	 * swap): not counted, and not proposed until it is used or leaves. */
	tp_policy_prefetch_done(pol, &b[5], true);
	n = pick(out);
	ok(n == 2 && out[0] == &b[4],
	   "a prefetch that brought nothing back is not repeated: b[4] next");
	for (size_t i = 0; i < n; i++)
		tp_policy_prefetch_done(pol, out[i], false);
	{
		const struct tp_victim_ops *ops = tp_policy_victim_ops(pol);
		struct tp_tensor *v;
		enum tp_leave how;

		b[5].resident_pages = 2;
		ops->add(ops->priv, &b[5]);
		ops->choose(ops->priv, 1, false, &v, &how);
		ops->del(ops->priv, &b[5]);
		b[5].resident_pages = 0;
	}
	n = pick(out);
	ok(n == 2 && out[0] == &b[5] && out[1] == &b[4],
	   "after leaving again it is proposed");
	tp_policy_prefetch_done(pol, &b[5], false);
	tp_policy_prefetch_done(pol, &b[4], false);
	tp_policy_prefetch_stats(pol, &st);
	ok(st.issued == 3, "a prefetch not issued is not counted");

	/* Pages evicted (not in host swap) are regenerated at use: a tensor
	 * with nothing in swap is not proposed. */
	b[5].evicted_pages = 2;
	n = pick(out);
	ok(n == 2 && out[0] == &b[4] && out[1] == &b[3],
	   "an evicted tensor is not prefetched: b[4], b[3]");
	b[5].evicted_pages = 0;
	tp_policy_prefetch_done(pol, &b[4], false);
	tp_policy_prefetch_done(pol, &b[3], false);

	/* DELTA §5.5: b[5] is cheaper to recompute (1 ns) than to reload
	 * (8 KiB at 11.2 B/ns): skipped, b[4] and b[3] instead. */
	cost[b[5].id] = 1;
	n = pick(out);
	ok(n == 2 && out[0] == &b[4] && out[1] == &b[3],
	   "a tensor cheaper to recompute is not prefetched");
	ok(tp_policy_recompute_back(pol, &b[5]) &&
	   !tp_policy_recompute_back(pol, &b[2]),
	   "and is recomputed at use; an expensive one is reloaded");
	tp_policy_prefetch_done(pol, &b[4], false);
	tp_policy_prefetch_done(pol, &b[3], false);

	/* policy.prefetch = 0 turns it off at run time. */
	tp_conf_set(&ctx.conf, "policy.prefetch", "0", "test", 0);
	ok(pick(out) == 0, "policy.prefetch=0: nothing");
	tp_conf_set(&ctx.conf, "policy.prefetch", "1", "test", 0);
	tp_conf_set(&ctx.conf, "policy.prefetch.depth", "8", "test", 0);
	n = pick(out);
	ok(n == 5 && out[0] == &b[4] && out[4] == &b[0],
	   "depth 8: every offloaded tensor still to be used (b[4]..b[0])");
	for (size_t i = 0; i < n; i++)
		tp_policy_prefetch_done(pol, out[i], false);

	/* A freed tensor is never proposed. */
	tp_policy_forget(pol, &b[4]);
	n = pick(out);
	ok(n == 4 && out[0] == &b[3] && out[3] == &b[0],
	   "a forgotten tensor is not proposed");
	for (size_t i = 0; i < n; i++)
		tp_policy_prefetch_done(pol, out[i], false);
	(void)start;
	tp_policy_iteration_end(pol);
	ok(pick(out) == 0, "outside an iteration: nothing");
	tp_policy_destroy(pol);
	resync();
	across_iterations();
	overlap_filter();
	replays_unrecorded();
	regen_late();
	halts_when_wasted();
	return exit_status();
}
