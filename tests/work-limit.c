/* SPDX-License-Identifier: MIT */
/*
 * pager.work_limit: a request, or an iteration, that does more paging
 * work than the bound allows ends with TP_EWORK, a message naming the
 * key, and every tensor as it was; raising the bound lets the same work
 * through. On the host backend, with the contents checked:
 *
 *  - a victim op that chooses, again and again, a tensor that cannot
 *    leave (a policy bug: the pager's loop spun on it without end);
 *  - the regeneration of a 300-op chain under a bound of one unit per
 *    tensor alive;
 *  - a request whose regeneration retries (lets its pins go) again and
 *    again, each retry within the request's bound, past the
 *    iteration's.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager_int.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define NF	1024		/* floats per tensor: one 4K chunk */
#define CHAIN	300

static struct tp_ctx *ctx;
/* The last message of the pager's, as the log callback saw it. */
static char said[256];

static void keep(enum tp_log_level level, const char *msg, void *priv)
{
	(void)level;
	(void)priv;
	if (!strncmp(msg, "pager:", 6))
		snprintf(said, sizeof(said), "%s", msg);
}

static void alarmed(int sig)
{
	static const char msg[] = "Bail out! a request did not end\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct tp_ctx *host(const char *budget, const char *more)
{
	char opts[256];
	struct tp_ctx *c;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=host,pager.rescue=0,vmm.chunk_size=4K,pager.budget=%s,"
		 "pager.slab_fraction=0,pager.range_cache=0,"
		 "pager.high_watermark=100%s", budget, more);
	c = tp_ctx_create(opts);
	if (!c)
		bail_out("tp_ctx_create(host): %s", strerror(errno));
	return c;
}

/* Whether @t holds @want. */
static bool holds(struct tp_tensor *t, const float *want)
{
	float got[NF];

	return !tp_tensor_read(ctx, t, 0, got, sizeof(got)) &&
	       !memcmp(got, want, sizeof(got));
}

/* Chunks the pager holds: every tensor's resident pages, nothing else. */
static bool no_leak(void)
{
	struct tp_tensor *t;
	size_t n = 0;

	cds_list_for_each_entry(t, &ctx->pager->tensors, link)
		n += t->resident_pages;
	return n == ctx->pager->held && !ctx->pager->slabs.chunks &&
	       !ctx->pager->cache.chunks;
}

static struct tp_tensor *stuck;

/* A broken policy: always the same tensor, which cannot leave. */
static int choose_stuck(void *priv, size_t need_bytes, bool no_offload,
			struct tp_tensor **victim, enum tp_leave *how)
{
	(void)priv;
	(void)need_bytes;
	(void)no_offload;
	*victim = stuck;
	*how = TP_LEAVE_EVICT;
	return 0;
}

static void broken_policy(void)
{
	struct tp_victim_ops ops = *ctx->vops;
	struct tp_tensor *a, *b, *c;
	float av[NF], bv[NF];
	char val[32];
	double t0, dt;
	void *addr;
	int err;

	a = tops_input(ctx, NF, 1);
	b = tops_input(ctx, NF, 2);
	stuck = tp_tensor_create(ctx, NF * sizeof(float), 0);
	c = tp_tensor_create(ctx, 15 * NF * sizeof(float), 0);
	if (!a || !b || !stuck || !c ||
	    tp_tensor_read(ctx, a, 0, av, sizeof(av)) ||
	    tp_tensor_read(ctx, b, 0, bv, sizeof(bv)))
		bail_out("tensors");
	ok(!tp_ctl_get(ctx, "pager.work_limit", val, sizeof(val)) &&
	   atoi(val) > 0, "pager.work_limit defaults to %s", val);

	ops.choose = choose_stuck;
	ops.choose_over_wait = NULL;
	tp_pager_set_victim_ops(ctx->pager, &ops);
	alarm(60);
	t0 = now_s();
	addr = tp_tensor_acquire(ctx, c, TP_WRITE);
	err = errno;
	dt = now_s() - t0;
	alarm(0);
	ok(!addr && err == TP_EWORK &&
	   strstr(tp_last_error(ctx), "pager.work_limit") &&
	   strstr(said, "one request"),
	   "broken policy: TP_EWORK after %.3f s: %s", dt, said);
	ok(!a->pins && !b->pins && !c->pins && !stuck->pins &&
	   !c->resident_pages && no_leak(),
	   "broken policy: nothing pinned, nothing backed, no chunk lost");
	tp_pager_set_victim_ops(ctx->pager, ctx->vops);
	ok(holds(a, av) && holds(b, bv), "broken policy: a and b intact");
	addr = tp_tensor_acquire(ctx, c, TP_WRITE);
	ok(addr && !tp_tensor_release(ctx, c) && holds(a, av) &&
	   holds(b, bv),
	   "the policy's own victims: c fits, a and b come back intact");
	tp_tensor_free(ctx, a);
	tp_tensor_free(ctx, b);
	tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, stuck);
}

/*
 * x_{i+1} = softsign(x_i) * 1.5 + 0.5, alternating two ops; each x_i
 * but the last freed, or kept in @keep[i - 1] when @keep is given.
 */
static struct tp_tensor *chain(struct tp_tensor *x0, unsigned n,
			       const float *x0v, float *want,
			       struct tp_tensor **keep)
{
	static const struct tops_scale_params sp = { 1.5f, 0.5f };
	size_t bytes = NF * sizeof(float);
	struct tp_tensor *x = x0, *y;

	memcpy(want, x0v, NF * sizeof(float));
	for (unsigned i = 0; i < n; i++) {
		int ret;

		y = NULL;
		if (i & 1)
			ret = tp_op_run(ctx, &tops_scale, &sp, sizeof(sp), &x,
					1, &y, &bytes, 1);
		else
			ret = tp_op_run(ctx, &tops_softsign, NULL, 0, &x, 1,
					&y, &bytes, 1);
		if (ret)
			bail_out("step %u: %s", i, tp_strerror(ret));
		if (x != x0 && keep)
			keep[i - 1] = x;
		else if (x != x0 && tp_tensor_free(ctx, x))
			bail_out("free");
		x = y;
		for (unsigned j = 0; j < NF; j++)
			want[j] = (i & 1) ? tops_ref_scale(want[j], 1.5f, 0.5f) :
					    tops_ref_softsign(want[j]);
	}
	return x;
}

static void regeneration(void)
{
	static float x0v[NF], want[NF];
	struct tp_tensor *x0, *end;
	char def[32];
	void *addr;
	int err;

	x0 = tops_input(ctx, NF, 3);
	if (!x0 || tp_tensor_read(ctx, x0, 0, x0v, sizeof(x0v)))
		bail_out("x0");
	end = chain(x0, CHAIN, x0v, want, NULL);
	if (tp_tensor_evict(ctx, end) ||
	    tp_ctl_get(ctx, "pager.work_limit", def, sizeof(def)))
		bail_out("evict");
	ok_rc(tp_ctl_set(ctx, "pager.work_limit", "1"),
	      "pager.work_limit = 1 (run time)");
	addr = tp_tensor_acquire(ctx, end, TP_READ);
	err = errno;
	ok(!addr && err == TP_EWORK &&
	   strstr(tp_last_error(ctx), "one request") &&
	   strstr(tp_last_error(ctx), "pager.work_limit"),
	   "a %u-op regeneration past 1 unit per tensor: %s", CHAIN, said);
	ok(!end->pins && !x0->pins && tp_pager_has_evicted(end) && no_leak() &&
	   holds(x0, x0v),
	   "regeneration: nothing pinned, its end still evicted, its input "
	   "intact, no chunk lost");
	ok(!tp_ctl_set(ctx, "pager.work_limit", def) && holds(end, want),
	   "pager.work_limit = %s: the end regenerated bit for bit", def);
	tp_tensor_free(ctx, end);
	tp_tensor_free(ctx, x0);
}

static int add(struct tp_tensor *a, struct tp_tensor *b,
	       struct tp_tensor **y)
{
	size_t bytes = NF * sizeof(float);
	struct tp_tensor *in[2] = { a, b };

	*y = NULL;
	return tp_op_run(ctx, &tops_add, NULL, 0, in, 2, y, &bytes, 1);
}

static struct tp_tensor *one(const struct tp_op_type *type, struct tp_tensor *a)
{
	static const struct tops_scale_params sp = { 1.5f, 0.5f };

	return tops_run1(ctx, type, type == &tops_scale ? &sp : NULL,
			 type == &tops_scale ? sizeof(sp) : 0, a,
			 NF * sizeof(float));
}

/*
 * p = a1 + a2 and q = b1 + b2 over four tensors made from x, under a
 * budget of four chunks: p + q needs p, q, x and its output, so each of
 * p and q, regenerated while the other is pinned for the sum, finds no
 * room and lets the pins go; the other leaves, and so on: lineage's
 * bounded retry (256 times, then ENOMEM). One request, each retry well
 * within its own bound, the iteration's bound stops it first.
 */
static void retries(void)
{
	static float pv[NF], qv[NF];
	struct tp_tensor *x, *a1, *a2, *b1, *b2, *p, *q, *z;
	struct tp_lineage_stats st0, st;
	int ret;

	x = tops_input(ctx, NF, 5);
	a1 = one(&tops_softsign, x);
	a2 = one(&tops_scale, x);
	b1 = one(&tops_scale, a1);
	b2 = one(&tops_softsign, a2);
	if (!x || !a1 || !a2 || !b1 || !b2 || add(a1, a2, &p) ||
	    add(b1, b2, &q) ||
	    tp_tensor_read(ctx, p, 0, pv, sizeof(pv)) ||
	    tp_tensor_read(ctx, q, 0, qv, sizeof(qv)))
		bail_out("p, q");
	if (tp_ctl_set(ctx, "pager.work_limit", "1") || tp_iteration_begin(ctx))
		bail_out("begin");
	tp_lineage_get_stats(ctx->lineage, &st0);
	ret = add(p, q, &z);
	tp_lineage_get_stats(ctx->lineage, &st);
	ok(ret == -TP_EWORK && !z &&
	   strstr(tp_last_error(ctx), "pager.work_limit") &&
	   strstr(said, "this iteration") &&
	   st.pin_drops > st0.pin_drops && st.pin_drops - st0.pin_drops < 256,
	   "retries: stopped after %llu of lineage's 256 retries: %s",
	   (unsigned long long)(st.pin_drops - st0.pin_drops), said);
	ret = tp_iteration_end(ctx);
	ok(!ret && !tp_ctl_set(ctx, "pager.work_limit", "0") && !x->pins &&
	   !p->pins && !q->pins && no_leak() && holds(p, pv) && holds(q, qv),
	   "retries: nothing pinned, no chunk lost, p and q intact");
	tp_lineage_get_stats(ctx->lineage, &st0);
	ret = add(p, q, &z);
	tp_lineage_get_stats(ctx->lineage, &st);
	/* lineage's 256 with p held, then tp_op_run's second order (q
	 * first, nothing held), itself bounded by the same 256. */
	ok(ret == -ENOMEM && st.pin_drops - st0.pin_drops > 256 &&
	   st.pin_drops - st0.pin_drops <= 2 * 256,
	   "retries: without a bound, the same request ends in ENOMEM after "
	   "256 retries and a second order's few (%llu)",
	   (unsigned long long)(st.pin_drops - st0.pin_drops));
	tp_tensor_free(ctx, x);
	tp_tensor_free(ctx, a1);
	tp_tensor_free(ctx, a2);
	tp_tensor_free(ctx, b1);
	tp_tensor_free(ctx, b2);
	tp_tensor_free(ctx, p);
	tp_tensor_free(ctx, q);
}

int main(void)
{
	plan_tests(13);
	signal(SIGALRM, alarmed);
	tp_set_log(keep, NULL);
	ok(strstr(tp_strerror(-TP_EWORK), "pager.work_limit") != NULL,
	   "tp_strerror(-TP_EWORK): %s", tp_strerror(-TP_EWORK));
	ctx = host("64K", "");
	broken_policy();
	regeneration();
	tp_ctx_destroy(ctx);
	/* Evictions only: an offload would end the back and forth. */
	ctx = host("16K", ",policy.director=evict");
	retries();
	tp_ctx_destroy(ctx);
	return exit_status();
}
