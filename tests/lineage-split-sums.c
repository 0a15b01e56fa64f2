/* SPDX-License-Identifier: MIT */
/*
 * Split runs whose parts may sum (struct tp_op_split, sums), host backend
 * with data: an op whose part 0 reads every row of its cut input (a
 * batch's mean) runs so where that fits; where it does not, its parts
 * read their own rows alone and sum into the whole output, in two passes
 * (the sums, then the outputs that need them), and the cut input streams
 * through host swap once a pass.
 *  - The results are a whole run's without a budget, byte for byte.
 *  - Nothing is regenerated and nothing is left held.
 *  - An output as wide as its input finds room in the last pass: the
 *    input's rows still to be read leave for host swap.
 *  - An input partly in host swap comes back in the first pass with no
 *    room but its own: the rows that pass read leave for host swap.
 *  - With a second cut input held whole through both passes while the
 *    first streams (a batch-norm's backward: dy streams, x does not),
 *    at every budget from where it fits to where it fits whole.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

/*
 * rowmix(x[rows][cols], w[cols]) -> y[rows], m[cols]: m the mean of x's
 * rows, each row added to m's float in turn; y[r] = sum over j of
 * (x[r][j] - m[j]) w[j]. Cut: x, y.
 */
struct mix_params {
	uint32_t rows, cols;
	uint32_t wide;		/* rowcenter: y as wide as x */
	uint32_t pair;		/* rowpair: w is b, as x (wide too) */
};

static unsigned long launches, summing, bad;

static void add_rows(const struct mix_params *p, const float *x, size_t n,
		     bool first, float *m)
{
	for (uint32_t j = 0; j < p->cols; j++) {
		float acc = first ? 0.0f : m[j];

		for (size_t r = 0; r < n; r++)
			acc = (float)((double)acc + x[r * p->cols + j]);
		m[j] = acc;
	}
}

/* y's @n rows; @first: m holds the sum yet, made the mean first. */
static void write_rows(const struct mix_params *p, const float *x,
		       const float *w, size_t n, bool first, float *m,
		       float *y)
{
	for (uint32_t j = 0; first && j < p->cols; j++)
		m[j] = (float)((double)m[j] / p->rows);
	for (size_t r = 0; r < n; r++) {
		double d = 0;

		for (uint32_t j = 0; j < p->cols; j++)
			d += (double)(x[r * p->cols + j] - m[j]) * w[j];
		y[r] = (float)d;
	}
}

/* rowcenter's y rows: (x - m) w, elementwise; @first as write_rows(). */
static void center_rows(const struct mix_params *p, const float *x,
			const float *w, size_t n, bool first, float *m,
			float *y)
{
	for (uint32_t j = 0; first && j < p->cols; j++)
		m[j] = (float)((double)m[j] / p->rows);
	for (size_t i = 0; i < n * p->cols; i++)
		y[i] = (x[i] - m[i % p->cols]) * w[i % p->cols];
}

/* rowpair's y rows: (x - m) b, b's rows as x's; @first as write_rows(). */
static void pair_rows(const struct mix_params *p, const float *x,
		      const float *b, size_t n, bool first, float *m, float *y)
{
	for (uint32_t j = 0; first && j < p->cols; j++)
		m[j] = (float)((double)m[j] / p->rows);
	for (size_t i = 0; i < n * p->cols; i++)
		y[i] = (x[i] - m[i % p->cols]) * b[i];
}

static int mix_launch(const struct tp_op_launch *l)
{
	const struct mix_params *p = l->params;
	size_t row = p->cols * sizeof(float), n = l->rows ? l->rows : p->rows;
	size_t y_row = p->wide ? row : sizeof(float);
	bool last = !l->sums || l->pass + 1 == l->passes;
	const float *x = l->in[0], *w = l->in[1];
	float *y = l->out[0], *m = l->out[1];

	launches++;
	summing += l->sums;
	if (l->in_bytes[0] != n * row || l->out_bytes[1] != row ||
	    l->in_bytes[1] != (p->pair ? n * row : row) ||
	    (l->sums && l->passes != 2) ||
	    (last ? !y || l->out_bytes[0] != n * y_row :
		    y || l->out_bytes[0])) {
		bad++;
		return -EINVAL;
	}
	if (l->sums && !l->pass) {
		add_rows(p, x, n, !l->row0, m);
		return 0;
	}
	/* part 0 of parts that read every row: x's rows from row 0 on */
	if (!l->sums && !l->part)
		add_rows(p, x, p->rows, true, m);
	if (p->pair)
		pair_rows(p, x, w, n, !l->row0, m, y);
	else if (p->wide)
		center_rows(p, x, w, n, !l->row0, m, y);
	else
		write_rows(p, x, w, n, !l->row0, m, y);
	return 0;
}

static int mix_split(const void *params, size_t len, const size_t *in_bytes,
		     unsigned n_in, const size_t *out_bytes, unsigned n_out,
		     struct tp_op_split *s)
{
	const struct mix_params *p = params;

	if (len != sizeof(*p) || n_in != 2 || n_out != 2)
		return -EINVAL;
	*s = (struct tp_op_split){ .rows = p->rows, .in = 1, .out = 1 };
	return 0;
}

static int sums_split(const void *params, size_t len, const size_t *in_bytes,
		      unsigned n_in, const size_t *out_bytes, unsigned n_out,
		      struct tp_op_split *s)
{
	int ret = mix_split(params, len, in_bytes, n_in, out_bytes, n_out, s);

	s->sums = 1;
	s->passes = 2;
	return ret;
}

/* The same op, whose parts read every row, and one whose parts may sum. */
static const struct tp_op_type mix_plain = {
	.name = "rowmix", .launch = mix_launch,
	.flags = TP_OP_SPLITTABLE, .split = mix_split,
};

static const struct tp_op_type mix_sums = {
	.name = "rowmix-sums", .launch = mix_launch,
	.flags = TP_OP_SPLITTABLE, .split = sums_split,
};

/*
 * rowcenter (mix_params.wide): rowmix's m, y[rows][cols] with y[r][j] =
 * (x[r][j] - m[j]) w[j]. Cut: x, y, rows as wide: the last pass's parts
 * need as much room for y as for x.
 */
static const struct tp_op_type center_sums = {
	.name = "rowcenter", .launch = mix_launch,
	.flags = TP_OP_SPLITTABLE, .split = sums_split,
};

/*
 * rowpair(a[rows][cols], b[rows][cols]) -> y[rows][cols], m[cols]: m the
 * mean of a's rows (as rowmix's), y = (a - m) b elementwise. Cut: a, b,
 * y; the parts sum m in a first pass, y in a second.
 */
static int pair_split(const void *params, size_t len, const size_t *in_bytes,
		      unsigned n_in, const size_t *out_bytes, unsigned n_out,
		      struct tp_op_split *s)
{
	int ret = sums_split(params, len, in_bytes, n_in, out_bytes, n_out, s);

	s->in = 3;	/* b too */
	return ret;
}

static const struct tp_op_type pair_sums = {
	.name = "rowpair", .launch = mix_launch,
	.flags = TP_OP_SPLITTABLE, .split = pair_split,
};

struct run {
	struct tp_ctx *ctx;
	struct tp_tensor *x, *w, *y, *m;
	struct tp_stats st;
	int ret;
};

#define CONF(budget) \
	"vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=" \
	budget ",pager.slab_fraction=0,pager.high_watermark=100," \
	"policy.prefetch=0,policy.director=delta-overlap," \
	"policy.filter=overlap,policy.costs=model"

/*
 * gen -> x, its last @swap_rows rows sent to host swap (all of them with
 * SWAP_ALL); rowmix(x, w) -> y, m.
 */
#define SWAP_ALL	UINT32_MAX

static struct run run_op(const char *conf, const struct mix_params *mp,
			 const struct tp_op_type *type, const float *wv,
			 uint32_t swap_rows)
{
	struct tops_gen_params gp = { 7, mp->rows * mp->cols };
	size_t row = mp->cols * sizeof(float);
	struct run r = { .ctx = tp_ctx_create(conf) };
	struct tp_tensor *in[2], *out[2] = { NULL, NULL };
	size_t ob[2] = { mp->rows * (mp->wide ? row : sizeof(float)), row };

	if (!r.ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	r.ret = tp_op_run(r.ctx, &tops_gen, &gp, sizeof(gp), NULL, 0, &r.x,
			  &(size_t){ gp.floats * sizeof(float) }, 1);
	r.w = tp_tensor_create(r.ctx, row, 0);
	if (r.ret || !r.w || tp_tensor_write(r.ctx, r.w, 0, wv, row) ||
	    (swap_rows == SWAP_ALL && tp_tensor_offload(r.ctx, r.x)) ||
	    (swap_rows && swap_rows < mp->rows &&
	     tp_pager_offload_range(r.ctx->pager, r.x,
				    (mp->rows - swap_rows) * row,
				    swap_rows * row)))
		bail_out("setting up x and w");
	in[0] = r.x;
	in[1] = r.w;
	launches = summing = bad = 0;
	r.ret = tp_op_run(r.ctx, type, mp, sizeof(*mp), in, 2, out, ob, 2);
	r.y = out[0];
	r.m = out[1];
	tp_stats_get(r.ctx, &r.st);
	return r;
}

static bool nothing_held(const struct run *r)
{
	return !r->x->rows_held && !r->x->pins && !r->w->pins &&
	       !r->y->pins && !r->m->pins;
}

/*
 * rowpair(a, b) at @conf: a made, then sent to host swap whole; b made
 * after it, resident.
 */
static struct run pair_run(const char *conf, const struct mix_params *mp)
{
	size_t bytes = (size_t)mp->rows * mp->cols * sizeof(float);
	struct tops_gen_params ga = { 7, mp->rows * mp->cols };
	struct tops_gen_params gb = { 11, mp->rows * mp->cols };
	struct run r = { .ctx = tp_ctx_create(conf) };
	struct tp_tensor *in[2], *out[2] = { NULL, NULL };
	size_t ob[2] = { bytes, mp->cols * sizeof(float) };

	if (!r.ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	r.ret = tp_op_run(r.ctx, &tops_gen, &ga, sizeof(ga), NULL, 0, &r.x,
			  &bytes, 1);
	r.ret = r.ret ?: tp_tensor_offload(r.ctx, r.x);
	r.ret = r.ret ?: tp_op_run(r.ctx, &tops_gen, &gb, sizeof(gb), NULL, 0,
				   &r.w, &bytes, 1);
	if (r.ret)
		bail_out("setting up a and b: %s", tp_strerror(r.ret));
	in[0] = r.x;
	in[1] = r.w;
	launches = summing = bad = 0;
	r.ret = tp_op_run(r.ctx, &pair_sums, mp, sizeof(*mp), in, 2, out, ob,
			  2);
	r.y = out[0];
	r.m = out[1];
	tp_stats_get(r.ctx, &r.st);
	return r;
}

/* An op on its inputs: rowpair's (pair_run()), or x's and w's (run_op()). */
struct op_case {
	const struct mix_params *mp;
	const struct tp_op_type *type;
	const float *wv;
	uint32_t swap_rows;
};

static struct run run_case(const char *conf, const struct op_case *oc)
{
	if (oc->type == &pair_sums)
		return pair_run(conf, oc->mp);
	return run_op(conf, oc->mp, oc->type, oc->wv, oc->swap_rows);
}

/*
 * @oc (x's last swap_rows rows in host swap) at every budget of @c0 to
 * @c1 chunks: in parts, within the budget, nothing held after, and y and
 * m a whole run's, byte for byte.
 */
static void in_parts_at(const char *what, const struct op_case *oc, int c0,
			int c1)
{
	struct op_case whole = *oc;
	unsigned fits = 0, same = 0, tries = 0;
	char failed[128] = "";
	struct run ref, r;
	void *ry, *rm;

	whole.swap_rows = 0;
	ref = run_case(CONF("64M"), &whole);
	if (ref.ret)
		bail_out("%s, whole: %s", what, tp_strerror(ref.ret));
	ry = tops_contents(ref.ctx, ref.y);
	rm = tops_contents(ref.ctx, ref.m);
	tp_ctx_destroy(ref.ctx);
	for (int c = c0; c <= c1; c++, tries++) {
		char conf[512], budget[16];
		size_t at = strlen(failed);

		snprintf(budget, sizeof(budget), "%dK", c * 64);
		snprintf(conf, sizeof(conf), CONF("%s"), budget);
		r = run_case(conf, oc);
		if (!r.ret && !bad && r.st.split_runs == 1 &&
		    r.st.phys_peak <= r.st.budget_bytes && nothing_held(&r))
			fits++;
		else
			snprintf(failed + at, sizeof(failed) - at, " %d", c);
		same += !r.ret && tops_same(r.ctx, r.y, ry) &&
			tops_same(r.ctx, r.m, rm);
		tp_ctx_destroy(r.ctx);
	}
	ok(fits == tries,
	   "%s: in parts at every budget of %d to %d chunks, within it, nothing held after (failed at:%s)",
	   what, c0, c1, failed[0] ? failed : " none");
	ok(same == tries,
	   "%s: y and m a whole run's, byte for byte, at each (%u of %u)",
	   what, same, tries);
	free(ry);
	free(rm);
}

int main(void)
{
	enum { COLS = 4096 };		/* a row 16K, 4 to a chunk */
	struct mix_params wide = { 20, COLS };	/* x: 5 chunks, y: 1 */
	static float wv[COLS];
	struct run ref, r;
	void *rx, *ry, *rm;

	plan_tests(14);
	for (size_t j = 0; j < COLS; j++)
		wv[j] = 0.5f + (float)(j % 7) / 8.0f;
	ref = run_op(CONF("64M"), &wide, &mix_sums, wv, 0);
	if (ref.ret)
		bail_out("the whole run: %s", tp_strerror(ref.ret));
	rx = tops_contents(ref.ctx, ref.x);
	ry = tops_contents(ref.ctx, ref.y);
	rm = tops_contents(ref.ctx, ref.m);
	tp_ctx_destroy(ref.ctx);

	/*
	 * In 7 chunks part 0 cannot hold x's 5 with w, m, y and the chunks
	 * where parts meet: an op whose parts cannot sum does not fit; one
	 * whose parts can, with x in host swap or resident, streams x once a
	 * pass.
	 */
	for (int in_swap = 1; in_swap >= 0; in_swap--) {
		const char *where = in_swap ? "in swap" : "resident";

		r = run_op(CONF("448K"), &wide, &mix_plain, wv,
			   in_swap ? SWAP_ALL : 0);
		ok(r.ret == -ENOMEM && !launches,
		   "x %s: parts reading every row do not fit (%s)", where,
		   tp_strerror(r.ret));
		tp_ctx_destroy(r.ctx);

		r = run_op(CONF("448K"), &wide, &mix_sums, wv,
			   in_swap ? SWAP_ALL : 0);
		ok(!r.ret && r.st.split_runs == 1 && r.st.split_parts >= 2 &&
		   launches == 2 * r.st.split_parts && summing == launches &&
		   !bad && r.st.phys_peak <= r.st.budget_bytes &&
		   (in_swap || r.st.offloads > 0),
		   "x %s: the parts sum, in 2 passes of %llu parts, within the "
		   "budget, %llu offloads (%s)", where,
		   (unsigned long long)r.st.split_parts,
		   (unsigned long long)r.st.offloads, tp_strerror(r.ret));
		ok(!r.ret && !r.st.recomputes && nothing_held(&r),
		   "x %s: nothing regenerated (%llu), nothing held after",
		   where, (unsigned long long)r.st.recomputes);
		ok(!r.ret && tops_same(r.ctx, r.y, ry) && tops_same(r.ctx, r.m, rm) &&
		   tops_same(r.ctx, r.x, rx),
		   "x %s: y and m are a whole run's, byte for byte; x reads "
		   "back right", where);
		tp_ctx_destroy(r.ctx);
	}
	free(rx);
	free(ry);
	free(rm);

	/*
	 * rowcenter's y is as wide as x: the first pass brings x back from
	 * host swap and leaves it resident where room lasts, and the last
	 * pass's parts need room for y's rows beside x's. Pinned by the part
	 * the op holds, x is no victim; its rows not read yet must leave for
	 * host swap (they failed at 11 and 12 chunks, fitting at 10).
	 */
	in_parts_at("rowcenter, x in swap",
		    &(struct op_case){ &(struct mix_params){ 32, COLS, 1 },
				       &center_sums, wv, SWAP_ALL }, 10, 17);

	/*
	 * rowmix-sums on x half resident, half in host swap: the first pass
	 * brings x's rows in swap back beside those it read, which stay for
	 * the second pass while room lasts. Making room for x's rows, the
	 * pager takes none of x's own: the rows the pass read leave for host
	 * swap as the next part's lack room (kept, the run failed at 9
	 * chunks; whole, it takes 11).
	 */
	in_parts_at("rowmix-sums, x half in swap",
		    &(struct op_case){ &(struct mix_params){ 32, COLS },
				       &mix_sums, wv, 16 }, 9, 10);

	/*
	 * rowpair: a streams (in host swap), b (resident) is held whole
	 * through both passes, as a batch-norm's backward holds x while dy
	 * streams; from 12 chunks (a part, b and the rows where parts meet)
	 * to 24 (whole, nearly).
	 */
	in_parts_at("rowpair, a in swap, b held whole",
		    &(struct op_case){ &(struct mix_params){ 32, COLS, 1, 1 },
				       &pair_sums }, 12, 24);
	return exit_status();
}
