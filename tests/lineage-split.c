/* SPDX-License-Identifier: MIT */
/*
 * Split runs (policy.split), host backend with data: an op that declares
 * TP_OP_SPLITTABLE and does not fit whole runs in parts.
 *  - Its results are those of a whole run without a budget, byte for
 *    byte, parts falling on chunk boundaries or not.
 *  - The pages of the cut input that the parts have read leave when the
 *    next part lacks room; the input regenerates right afterwards.
 *  - Part 0 sees every row of the cut input and writes the whole output;
 *    each launch is told its part and rows.
 *  - A part that fails leaves no output, nothing pinned, the inputs as
 *    they were; off, or with no number of parts that fits, the op fails
 *    with -ENOMEM and nothing changes.
 *  - A plan's number of parts (the op hooks' begin(), as policy.plan's)
 *    is the fewest it runs in: where they do not fit the room there is
 *    now, the op runs in as many as fit, with a whole run's bytes.
 *  - An op whose parts read their rows alone (TP_OP_SPLIT_LOCAL) streams
 *    a cut input that is in host swap: each part brings back its rows
 *    alone, so it fits a budget the input would not; nothing is
 *    regenerated, and the results are a whole run's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/hooks.h"
#include "pager/pager.h"
#include "policy/policy_priv.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define CHUNK	65536

/*
 * rowmix(x[rows][cols], w[cols]) -> y[rows][cols], m[cols]:
 * m[j] = mean over rows of x[r][j] (a batch reduction, like batchnorm's),
 * y[r][j] = (x[r][j] - m[j]) * w[j]. Cut: x and y; whole: w and m.
 */
struct mix_params {
	uint32_t rows, cols;
	int32_t fail_part;	/* fail the launch of this part, or -1 */
};

static unsigned long mix_launches, mix_bad_parts;

static int mix_launch(const struct tp_op_launch *l)
{
	const struct mix_params *p = l->params;
	size_t row = p->cols * sizeof(float);
	size_t r0 = l->rows ? l->row0 : 0, n = l->rows ? l->rows : p->rows;
	const float *x = l->in[0], *w = l->in[1];
	float *y = l->out[0], *m = l->out[1];

	mix_launches++;
	if (l->n_in != 2 || l->n_out != 2 || l->in_bytes[0] != n * row ||
	    l->out_bytes[0] != n * row || l->in_bytes[1] != row ||
	    l->out_bytes[1] != row || r0 + n > p->rows ||
	    l->part >= l->parts || (l->parts > 1 && !l->rows)) {
		mix_bad_parts++;
		return -EINVAL;
	}
	if (p->fail_part == (int32_t)l->part && l->parts > 1)
		return -EIO;
	if (l->part == 0) {
		/* Every row of x is there: from row0 (0) to the end. */
		for (uint32_t j = 0; j < p->cols; j++) {
			double s = 0;

			for (uint32_t r = 0; r < p->rows; r++)
				s += x[(size_t)r * p->cols + j];
			m[j] = (float)(s / p->rows);
		}
	}
	for (size_t r = 0; r < n; r++)
		for (uint32_t j = 0; j < p->cols; j++)
			y[r * p->cols + j] =
				(x[r * p->cols + j] - m[j]) * w[j];
	return 0;
}

static int mix_split(const void *params, size_t len, const size_t *in_bytes,
		     unsigned n_in, const size_t *out_bytes, unsigned n_out,
		     struct tp_op_split *s)
{
	const struct mix_params *p = params;

	if (len != sizeof(*p) || n_in != 2 || n_out != 2)
		return -EINVAL;
	s->rows = p->rows;
	s->in = 1;		/* x */
	s->out = 1;		/* y */
	return 0;
}

static const struct tp_op_type mix = {
	.name = "rowmix", .launch = mix_launch,
	.flags = TP_OP_SPLITTABLE, .split = mix_split,
};

static const struct tp_op_type mix_whole = {
	.name = "rowmix-whole", .launch = mix_launch,
};

/* rowdot(x[rows][cols], w[cols]) -> y[rows]: y[r] = sum over j of x[r][j] w[j]. */
static unsigned long scale_launches, scale_bad;

static int scale_launch(const struct tp_op_launch *l)
{
	const struct mix_params *p = l->params;
	size_t row = p->cols * sizeof(float);
	size_t n = l->rows ? l->rows : p->rows;
	const float *x = l->in[0], *w = l->in[1];
	float *y = l->out[0];

	scale_launches++;
	if (l->n_in != 2 || l->n_out != 1 || l->in_bytes[0] != n * row ||
	    l->out_bytes[0] != n * sizeof(float) || l->in_bytes[1] != row) {
		scale_bad++;
		return -EINVAL;
	}
	for (size_t r = 0; r < n; r++) {
		double sum = 0;

		for (uint32_t j = 0; j < p->cols; j++)
			sum += (double)x[r * p->cols + j] * w[j];
		y[r] = (float)sum;
	}
	return 0;
}

static int scale_split(const void *params, size_t len, const size_t *in_bytes,
		       unsigned n_in, const size_t *out_bytes, unsigned n_out,
		       struct tp_op_split *s)
{
	const struct mix_params *p = params;

	if (len != sizeof(*p) || n_in != 2 || n_out != 1)
		return -EINVAL;
	s->rows = p->rows;
	s->in = 1;		/* x */
	s->out = 1;		/* y */
	return 0;
}

static const struct tp_op_type scale_local = {
	.name = "rowdot", .launch = scale_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, .split = scale_split,
};

/* The same op, not declared local: part 0 holds every row of x. */
static const struct tp_op_type scale_held = {
	.name = "rowdot-held", .launch = scale_launch,
	.flags = TP_OP_SPLITTABLE, .split = scale_split,
};

/* A plan that asks for @planned_parts parts of every op it can cut. */
static unsigned planned_parts;

static bool plan_wants_cut(void *priv)
{
	return true;
}

static unsigned plan_begin(void *priv, struct tp_tensor *const *in,
			   unsigned n_in, const struct tp_op_split *cut)
{
	return cut ? planned_parts : 0;
}

static const struct tp_op_hooks plan_hooks = {
	.wants_cut = plan_wants_cut, .begin = plan_begin,
};

struct run {
	struct tp_ctx *ctx;
	struct tp_tensor *x, *w, *y, *m;
	int ret;
};

/*
 * gen -> x; w from @wv; rowmix(x, w) -> y, m (rowdot: y alone; x sent
 * to host swap first with @offload_x).
 */
static struct run run_op(const char *conf, const struct mix_params *mp,
			 const struct tp_op_type *type, const float *wv,
			 bool offload_x)
{
	struct tops_gen_params gp = { 7, mp->rows * mp->cols };
	size_t row = mp->cols * sizeof(float);
	struct run r = { .ctx = tp_ctx_create(conf) };
	struct tp_tensor *in[2], *out[2] = { NULL, NULL };
	size_t ob[2] = { mp->rows * row, row };
	unsigned n_out = 2;

	if (type->launch == scale_launch) {
		ob[0] = mp->rows * sizeof(float);
		n_out = 1;
	}

	if (!r.ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	r.ret = tp_op_run(r.ctx, &tops_gen, &gp, sizeof(gp), NULL, 0, &r.x,
			  &(size_t){ gp.floats * sizeof(float) }, 1);
	r.w = tp_tensor_create(r.ctx, row, 0);
	if (r.ret || !r.w || tp_tensor_write(r.ctx, r.w, 0, wv, row) ||
	    (offload_x && tp_tensor_offload(r.ctx, r.x)))
		bail_out("setting up x and w");
	in[0] = r.x;
	in[1] = r.w;
	if (planned_parts)
		tp_lineage_set_op_hooks(r.ctx->lineage, &plan_hooks);
	r.ret = tp_op_run(r.ctx, type, mp, sizeof(*mp), in, 2, out, ob, n_out);
	if (!r.ret) {
		r.y = out[0];
		r.m = out[1];
	}
	return r;
}

static struct run run_mix(const char *conf, const struct mix_params *mp,
			  const struct tp_op_type *type, const float *wv)
{
	return run_op(conf, mp, type, wv, false);
}

static struct tp_stats stats(struct run *r)
{
	struct tp_stats st;

	tp_stats_get(r->ctx, &st);
	return st;
}

#define CONF(budget, extra) \
	"vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=" budget "," \
	"pager.slab_fraction=0,pager.high_watermark=100,policy.prefetch=0," \
	"policy.director=delta-overlap,policy.filter=overlap," \
	"policy.costs=model" extra

/*
 * One shape: the whole run without a budget is the reference; under
 * @budget, the split run must give the same bytes in @parts parts.
 */
static void shape(const char *what, uint32_t rows, uint32_t cols,
		  const char *budget_conf, unsigned parts, const float *wv)
{
	struct mix_params mp = { rows, cols, -1 };
	struct run ref = run_mix(CONF("64M", ""), &mp, &mix_whole, wv);
	struct run r;
	void *ry, *rm, *rx;
	struct tp_stats st;

	if (ref.ret)
		bail_out("reference run: %s", tp_strerror(ref.ret));
	ry = tops_contents(ref.ctx, ref.y);
	rm = tops_contents(ref.ctx, ref.m);
	rx = tops_contents(ref.ctx, ref.x);

	mix_launches = 0;
	r = run_mix(budget_conf, &mp, &mix, wv);
	st = stats(&r);
	ok(!r.ret && st.split_runs == 1 && st.split_parts == parts &&
	   mix_launches == parts && !mix_bad_parts,
	   "%s: it did not fit whole and ran in %u parts (%s; %llu parts, %lu launches)",
	   what, parts, tp_strerror(r.ret),
	   (unsigned long long)st.split_parts, mix_launches);
	ok(st.phys_peak <= st.budget_bytes,
	   "%s: the peak, %llu bytes, stayed within the budget", what,
	   (unsigned long long)st.phys_peak);
	ok(!r.ret && tops_same(r.ctx, r.y, ry) &&
	   tops_same(r.ctx, r.m, rm),
	   "%s: y and the batch mean m are a whole run's, byte for byte", what);
	ok(!r.ret && tops_same(r.ctx, r.x, rx) && !r.x->pins &&
	   !r.y->pins && !r.w->pins,
	   "%s: x reads back right; nothing is left pinned", what);
	free(ry);
	free(rm);
	free(rx);
	tp_ctx_destroy(ref.ctx);
	tp_ctx_destroy(r.ctx);
}

int main(void)
{
	enum { ROWS = 16, COLS = 4096 };	/* x: 4 chunks, a row 16K */
	struct mix_params mp = { ROWS, COLS, -1 };
	static float wv[16384];
	struct run r;
	struct tp_stats st;
	void *rx;

	plan_tests(29);
	for (size_t j = 0; j < 16384; j++)
		wv[j] = 0.5f + (float)(j % 7) / 8.0f;

	/*
	 * Whole: x 4 + w 1 + y 4 + m 1 = 10 chunks; 9 fit 4 parts of a
	 * chunk each, the last one with room from x's first 3 chunks.
	 */
	shape("aligned", ROWS, COLS, CONF("576K", ""), 4, wv);
	{
		struct run ref = run_mix(CONF("64M", ""), &mp, &mix_whole, wv);
		void *ry = tops_contents(ref.ctx, ref.y);

		rx = tops_contents(ref.ctx, ref.x);
		tp_ctx_destroy(ref.ctx);
		/* The same run: x's pages read by all parts left. */
		r = run_mix(CONF("576K", ""), &mp, &mix, wv);
		ok(!r.ret && r.x->evicted_pages == 3 &&
		   r.x->resident_pages == 1 && stats(&r).evictions >= 1,
		   "x's 3 pages read by the first 3 parts were evicted for the last (%zu evicted)",
		   r.x->evicted_pages);
		/*
		 * y's replay, with x resident and m evicted to make room for
		 * it, does not fit whole either: it runs in parts too.
		 */
		ok(tops_same(r.ctx, r.x, rx) &&
		   !tp_tensor_evict(r.ctx, r.y) && r.y->evicted_pages == 4,
		   "x regenerated whole; y evicted");
		st = stats(&r);
		ok(tops_same(r.ctx, r.y, ry) &&
		   stats(&r).split_runs == st.split_runs + 1 &&
		   stats(&r).recomputes > st.recomputes &&
		   stats(&r).phys_peak <= stats(&r).budget_bytes,
		   "y's replay ran in parts, byte for byte (%llu split runs)",
		   (unsigned long long)stats(&r).split_runs);
		tp_ctx_destroy(r.ctx);
		free(ry);
		free(rx);
	}
	/*
	 * A plan for 2 parts where 4 are needed (576K): the op runs in the
	 * parts that fit, byte for byte a whole run's.
	 */
	{
		struct run ref = run_mix(CONF("64M", ""), &mp, &mix_whole, wv);
		void *ry = tops_contents(ref.ctx, ref.y);

		tp_ctx_destroy(ref.ctx);
		planned_parts = 2;
		mix_launches = 0;
		r = run_mix(CONF("576K", ""), &mp, &mix, wv);
		planned_parts = 0;
		ok(!r.ret && tops_same(r.ctx, r.y, ry) &&
		   stats(&r).split_runs == 1 && stats(&r).split_parts == 4 &&
		   !mix_bad_parts,
		   "a plan of 2 parts that do not fit: the op ran in 4, byte for byte (%s; %llu parts, %lu launches)",
		   tp_strerror(r.ret),
		   (unsigned long long)stats(&r).split_parts, mix_launches);
		tp_ctx_destroy(r.ctx);
		/*
		 * A plan made for a larger batch: more parts than the op
		 * has rows. One row a part, byte for byte.
		 */
		planned_parts = 2 * ROWS;
		mix_launches = 0;
		r = run_mix(CONF("64M", ""), &mp, &mix, wv);
		planned_parts = 0;
		ok(!r.ret && tops_same(r.ctx, r.y, ry) &&
		   stats(&r).split_parts == ROWS && mix_launches == ROWS &&
		   !mix_bad_parts,
		   "a plan of more parts than rows: one row a part, byte for byte (%s; %lu launches)",
		   tp_strerror(r.ret), mix_launches);
		tp_ctx_destroy(r.ctx);
		free(ry);
	}
	/*
	 * 12 rows of 20K: parts of 3 rows (60K) straddle chunks. x and y
	 * 240K, 4 chunks each; w, m 20K, one each.
	 */
	shape("straddling", 12, 5120, CONF("576K", ""), 4, wv);
	/*
	 * 15 rows of 48K: x and y 12 chunks (11.25), w and m one each; 20
	 * fit 3 parts of 5 rows, 3.75 chunks each.
	 */
	shape("uneven", 15, 12288, CONF("1280K", ""), 3, wv);

	/* Off: the op does not fit; nothing changes. */
	mix_launches = 0;
	r = run_mix(CONF("576K", ",policy.split=off"), &mp, &mix, wv);
	st = stats(&r);
	ok(r.ret == -ENOMEM && !st.split_runs && !mix_launches,
	   "policy.split=off: -ENOMEM, nothing launched (%s)",
	   tp_strerror(r.ret));
	ok(!r.x->pins && !r.w->pins && st.tensors_live == 2,
	   "no output made, nothing pinned");
	tp_ctx_destroy(r.ctx);

	/* No number of parts fits: x alone nearly fills the budget. */
	r = run_mix(CONF("320K", ""), &mp, &mix, wv);
	ok(r.ret == -ENOMEM && !stats(&r).split_runs &&
	   strstr(tp_last_error(r.ctx), "nor in parts"),
	   "no number of parts fits: -ENOMEM, said (%s)", tp_last_error(r.ctx));
	tp_ctx_destroy(r.ctx);

	/* A part that fails: no output, nothing held, x as it was. */
	{
		struct run ref = run_mix(CONF("64M", ""), &mp, &mix_whole, wv);

		rx = tops_contents(ref.ctx, ref.x);
		tp_ctx_destroy(ref.ctx);
	}
	mp.fail_part = 2;
	r = run_mix(CONF("576K", ""), &mp, &mix, wv);
	st = stats(&r);
	ok(r.ret == -EIO && st.tensors_live == 2 && !r.x->pins && !r.w->pins,
	   "part 2 fails: -EIO, no output left, nothing pinned (%s, %llu live)",
	   tp_strerror(r.ret), (unsigned long long)st.tensors_live);
	ok(tops_same(r.ctx, r.x, rx) &&
	   stats(&r).phys_bytes <= 6 * CHUNK,
	   "x reads back right, and the outputs' chunks were returned");
	tp_ctx_destroy(r.ctx);
	free(rx);

	/*
	 * Streaming: x (20 rows of 16K, 5 chunks) in host swap, w and y a
	 * chunk each, in a budget of 6. Held from each part's rows to the
	 * end, x's rows come back at once: part 0 needs all of x, and no
	 * number of parts fits. Streamed, a part brings back its rows alone
	 * (and the next part's before it lets go of them); nothing is
	 * regenerated.
	 */
	{
		struct mix_params wide = { 20, COLS, -1 };
		struct run ref = run_mix(CONF("64M", ""), &wide, &scale_local,
					 wv);
		void *ry = tops_contents(ref.ctx, ref.y);

		rx = tops_contents(ref.ctx, ref.x);
		tp_ctx_destroy(ref.ctx);
		r = run_op(CONF("384K", ""), &wide, &scale_held, wv, true);
		ok(r.ret == -ENOMEM && !stats(&r).split_runs,
		   "x in swap, held to the end: no number of parts fits (%s)",
		   tp_strerror(r.ret));
		tp_ctx_destroy(r.ctx);

		scale_launches = scale_bad = 0;
		r = run_op(CONF("384K", ""), &wide, &scale_local, wv, true);
		st = stats(&r);
		ok(!r.ret && st.split_runs == 1 && st.split_parts >= 2 &&
		   scale_launches == st.split_parts && !scale_bad &&
		   st.phys_peak <= st.budget_bytes,
		   "TP_OP_SPLIT_LOCAL: x streams, the op fits in %llu parts (%s)",
		   (unsigned long long)st.split_parts, tp_strerror(r.ret));
		ok(!r.ret && !st.recomputes && !r.x->rows_held && !r.x->pins &&
		   !r.w->pins && !r.y->pins,
		   "nothing regenerated, nothing held after (%llu recomputes)",
		   (unsigned long long)st.recomputes);
		ok(!r.ret && tops_same(r.ctx, r.y, ry) &&
		   tops_same(r.ctx, r.x, rx),
		   "y is a whole run's, byte for byte; x reads back right");
		tp_ctx_destroy(r.ctx);

		/*
		 * x resident, not in swap: held from each part's rows to
		 * the end it needs all 5 chunks in part 0, and no number of
		 * parts fits; streamed, its unread rows go to host swap as
		 * the parts need room, and come back a part at a time.
		 */
		scale_launches = scale_bad = 0;
		r = run_op(CONF("384K", ""), &wide, &scale_local, wv, false);
		st = stats(&r);
		ok(!r.ret && st.split_runs == 1 && st.split_parts >= 2 &&
		   scale_launches == st.split_parts && !scale_bad &&
		   st.offloads > 0 && st.phys_peak <= st.budget_bytes &&
		   !r.x->rows_held && !r.x->pins,
		   "x resident: it streams through host swap, the op fits in %llu parts, %llu offloads (%s)",
		   (unsigned long long)st.split_parts,
		   (unsigned long long)st.offloads, tp_strerror(r.ret));
		ok(!r.ret && tops_same(r.ctx, r.y, ry) &&
		   tops_same(r.ctx, r.x, rx),
		   "x resident: y is a whole run's, byte for byte; x reads back right");
		tp_ctx_destroy(r.ctx);
		free(ry);
		free(rx);
	}

	/* auto: with delta-overlap only. */
	r.ctx = tp_ctx_create("vmm.backend=sim,pager.rescue=0");
	ok(r.ctx && !tp_ctl_set(r.ctx, "policy.director", "delta-overlap") &&
	   tp_policy_split(r.ctx->policy) &&
	   !tp_ctl_set(r.ctx, "policy.director", "delta") &&
	   !tp_policy_split(r.ctx->policy) &&
	   !tp_ctl_set(r.ctx, "policy.split", "on") &&
	   tp_policy_split(r.ctx->policy),
	   "auto: on with delta-overlap, off with delta; on is on");
	tp_ctx_destroy(r.ctx);
	return exit_status();
}
