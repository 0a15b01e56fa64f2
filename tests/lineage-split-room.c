/* SPDX-License-Identifier: MIT */
/*
 * Split runs that find no room (host backend, with data), on an op with
 * two outputs of its input's size (a residual add's backward):
 *  - In a budget where the input and both outputs never fit at once
 *    however many parts, it runs with each part's rows written sent to
 *    host swap before the next part's are taken. The outputs are a whole
 *    run's, byte for byte; both were in host swap when the op returned,
 *    none of their pages evicted (they cannot be regenerated: written by
 *    the op under way); nothing is pinned or held afterwards. Where host
 *    swap cannot hold them (pager.host_budget), the op fails with
 *    -ENOMEM, and its input is unchanged.
 *  - A part that finds no room though the parts were chosen to fit (here
 *    a launch that answers -ENOMEM once, as one short of scratch does)
 *    does not end the op: the rows from its first are run on in twice as
 *    many parts as were left, each row launched once, the parts numbered
 *    on (part 0 alone at row 0, the last alone at the end), and the
 *    outputs are a whole run's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define ROWS	64
#define COLS	4096			/* a row: 16 KiB; the input: 1 MiB */
#define BYTES	((size_t)ROWS * COLS * sizeof(float))

/*
 * fan2(x) -> y1 = 2x, y2 = x + 1: local to its rows. Part @fail_part
 * (-1: none) answers -ENOMEM once, before writing anything; the rows
 * each launch that ran covered are counted in row_runs.
 */
static unsigned long fan_launches, fan_bad;
static int fail_part = -1;
static unsigned row_runs[ROWS];

static int fan_launch(const struct tp_op_launch *l)
{
	size_t r0 = l->rows ? l->row0 : 0, rows = l->rows ? l->rows : ROWS;
	size_t n = rows * COLS;
	const float *x = l->in[0];
	float *a = l->out[0], *b = l->out[1];

	fan_launches++;
	if (l->n_in != 1 || l->n_out != 2 ||
	    l->in_bytes[0] != n * sizeof(float) ||
	    l->out_bytes[0] != n * sizeof(float) ||
	    l->out_bytes[1] != n * sizeof(float) || r0 + rows > ROWS ||
	    (l->rows && ((l->part == 0) != (r0 == 0) ||
			 (l->part + 1 == l->parts) != (r0 + rows == ROWS)))) {
		fan_bad++;
		return -EINVAL;
	}
	if (l->rows && (int)l->part == fail_part) {
		fail_part = -1;
		return -ENOMEM;
	}
	for (size_t i = r0; i < r0 + rows; i++)
		row_runs[i]++;
	for (size_t i = 0; i < n; i++) {
		a[i] = 2 * x[i];
		b[i] = x[i] + 1;
	}
	return 0;
}

static int fan_split(const void *params, size_t len, const size_t *in_bytes,
		     unsigned n_in, const size_t *out_bytes, unsigned n_out,
		     struct tp_op_split *s)
{
	if (n_in != 1 || n_out != 2)
		return -EINVAL;
	s->rows = ROWS;
	s->in = 1;
	s->out = 3;
	return 0;
}

static const struct tp_op_type fan2 = {
	.name = "fan2", .launch = fan_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, .split = fan_split,
};

#define CONF(budget, extra) \
	"vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.budget=" budget "," \
	"pager.slab_fraction=0,pager.high_watermark=100,policy.prefetch=0," \
	"policy.costs=model" extra

struct run {
	struct tp_ctx *ctx;
	struct tp_tensor *x, *y[2];
	int ret;
};

static struct run run(const char *conf)
{
	struct tops_gen_params gp = { 11, ROWS * COLS };
	struct run r = { .ctx = tp_ctx_create(conf) };
	size_t ob[2] = { BYTES, BYTES };

	if (!r.ctx)
		bail_out("tp_ctx_create(%s): %s", conf, strerror(errno));
	if (tp_op_run(r.ctx, &tops_gen, &gp, sizeof(gp), NULL, 0, &r.x,
		      &(size_t){ BYTES }, 1))
		bail_out("gen: %s", tp_last_error(r.ctx));
	r.ret = tp_op_run(r.ctx, &fan2, NULL, 0, &r.x, 1, r.y, ob, 2);
	return r;
}

static size_t swapped(struct run *r, unsigned k)
{
	return tp_pager_swapped_pages(r->y[k]);
}

/* Whether every row was launched exactly once since row_runs was zeroed. */
static bool rows_once(void)
{
	for (unsigned i = 0; i < ROWS; i++)
		if (row_runs[i] != 1)
			return false;
	return true;
}

/*
 * In 40 chunks (x and both outputs, 48, do not fit whole; four parts do)
 * with part @fail answering -ENOMEM once: the run goes on finer.
 */
static void resumed(int fail, void *const *y)
{
	struct tp_stats st;
	struct run r;

	memset(row_runs, 0, sizeof(row_runs));
	fail_part = fail;
	r = run(CONF("2560K", ""));
	tp_stats_get(r.ctx, &st);
	ok(!r.ret && fail_part == -1 && st.split_runs == 1 &&
	   st.split_parts > 4,
	   "part %d short of room once: the op ran on, in %llu parts (%s)",
	   fail, (unsigned long long)st.split_parts,
	   r.ret ? tp_last_error(r.ctx) : "ok");
	ok(rows_once() && !fan_bad,
	   "each row launched once, the parts numbered on");
	ok(!r.ret && tops_same(r.ctx, r.y[0], y[0]) &&
	   tops_same(r.ctx, r.y[1], y[1]),
	   "both outputs are the whole run's, byte for byte");
	tp_ctx_destroy(r.ctx);
}

/*
 * fan2(y) where y = scale(x) was evicted, with x, and a tensor of 16
 * chunks is held beside: a part cannot take y by its rows (scale replays
 * whole), and y's replay (x and y, 32 chunks) finds no room in the 24 of
 * 40 left. The op fails, saying which input comes back whole and by what
 * replay; y is left evicted, as it was.
 */
static void whole_replay_named(void)
{
	struct tops_gen_params gp = { 11, ROWS * COLS };
	struct tops_scale_params sp = { 3.0f, 0.5f };
	struct tp_ctx *ctx = tp_ctx_create(CONF("2560K", ""));
	struct tp_tensor *x = NULL, *y = NULL, *held = NULL;
	struct tp_tensor *out[2] = { NULL, NULL };
	size_t ob[2] = { BYTES, BYTES };
	char want[128];
	int ret;

	if (!ctx ||
	    tp_op_run(ctx, &tops_gen, &gp, sizeof(gp), NULL, 0, &x,
		      &(size_t){ BYTES }, 1) ||
	    tp_op_run(ctx, &tops_scale, &sp, sizeof(sp), &x, 1, &y,
		      &(size_t){ BYTES }, 1) ||
	    tp_tensor_evict(ctx, y) || tp_tensor_evict(ctx, x) ||
	    !(held = tp_tensor_create(ctx, BYTES, 0)) ||
	    !tp_tensor_acquire(ctx, held, TP_WRITE))
		bail_out("setting up y = scale(x): %s",
			 ctx ? tp_last_error(ctx) : strerror(errno));
	ret = tp_op_run(ctx, &fan2, NULL, 0, &y, 1, out, ob, 2);
	snprintf(want, sizeof(want),
		 "input 0 (tensor %llu) comes back whole, by a replay of scale on 2.0 MiB of operands",
		 (unsigned long long)y->id);
	ok(ret == -ENOMEM && strstr(tp_last_error(ctx), want),
	   "y evicted, its replay too big: -ENOMEM naming y and scale (%s)",
	   tp_last_error(ctx));
	ok(!out[0] && !out[1] && y->evicted_pages == y->nr_pages && !y->pins &&
	   !y->rows_held, "no output made; y left evicted, held by no one");
	tp_tensor_release(ctx, held);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct run ref, r, full;
	void *x0, *y[2];
	struct tp_stats st;

	plan_tests(17);
	ref = run(CONF("64M", ""));
	if (ref.ret)
		bail_out("the whole run: %s", tp_last_error(ref.ctx));
	x0 = tops_contents(ref.ctx, ref.x);
	y[0] = tops_contents(ref.ctx, ref.y[0]);
	y[1] = tops_contents(ref.ctx, ref.y[1]);

	/* 24 chunks: x (16) and one output (16) never fit together. */
	r = run(CONF("1536K", ""));
	ok_rc(r.ret, "fan2 in 24 chunks: runs (%s)",
	      r.ret ? tp_last_error(r.ctx) : "ok");
	if (r.ret)
		bail_out("cannot go on");
	tp_stats_get(r.ctx, &st);
	ok(st.split_runs == 1 && !fan_bad, "in parts (%llu parts)",
	   (unsigned long long)st.split_parts);
	ok(swapped(&r, 0) && swapped(&r, 1) && !r.y[0]->evicted_pages &&
	   !r.y[1]->evicted_pages,
	   "both outputs were in host swap as the op returned, none evicted (%zu, %zu pages)",
	   swapped(&r, 0), swapped(&r, 1));
	ok(!r.y[0]->pins && !r.y[1]->pins && !r.x->pins &&
	   !r.y[0]->rows_held && !r.y[1]->rows_held && !r.x->rows_held,
	   "nothing pinned or held afterwards");
	ok(tops_same(r.ctx, r.y[0], y[0]), "y1 is the whole run's, byte for byte");
	ok(tops_same(r.ctx, r.y[1], y[1]), "y2 is the whole run's, byte for byte");
	tp_ctx_destroy(r.ctx);

	/* Host swap of 8 chunks: the outputs cannot leave; -ENOMEM. */
	full = run(CONF("1536K", ",pager.host_budget=512K"));
	ok(full.ret == -ENOMEM, "host swap of 8 chunks: -ENOMEM (%d: %s)",
	   full.ret, full.ret ? tp_last_error(full.ctx) : "ran");
	ok(!full.x->pins && !full.x->rows_held, "the input is held by no one");
	ok(tops_same(full.ctx, full.x, x0), "and reads back unchanged");
	tp_ctx_destroy(full.ctx);

	/* The parts a budget of 40 chunks takes, no part failing. */
	memset(row_runs, 0, sizeof(row_runs));
	r = run(CONF("2560K", ""));
	tp_stats_get(r.ctx, &st);
	diag("in 40 chunks: %llu parts", (unsigned long long)st.split_parts);
	tp_ctx_destroy(r.ctx);
	resumed(0, y);
	resumed((int)st.split_parts / 2, y);
	whole_replay_named();

	tp_ctx_destroy(ref.ctx);
	free(x0);
	free(y[0]);
	free(y[1]);
	return exit_status();
}
