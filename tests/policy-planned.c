/* SPDX-License-Identifier: MIT */
/*
 * policy.plan = tsplit carried out. On the host backend, a model trained
 * under about half its unconstrained peak with the plan on ends with the same
 * weights, bit for bit, as without it and as unconstrained, while the
 * iterations change under the plan: one runs an op the record does not
 * have (the plan stops holding there and the filter and director take
 * over, without an error), and a tensor pinned across two iterations
 * takes room the plan did not have. On the sim, a shipped trace replayed
 * in steady iterations follows its plan without a break, and so does a
 * model trained there, whose first op reads a tensor no one acquired
 * before (its input, made without data). A value the key does not take
 * is refused with the key named.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "tap.h"
#include "trace/replay.h"

#define STEPS		10
#define EXTRA_OP_AT	4	/* an op the record does not have */
#define PIN_AT		6	/* a tensor pinned from here ... */
#define PIN_UNTIL	7	/* ... to the end of this iteration */

static int copy_launch(const struct tp_op_launch *l)
{
	memcpy(l->out[0], l->in[0], l->in_bytes[0]);
	return 0;
}

static const struct tp_op_type copy_op = {
	.name = "test-copy",
	.launch = copy_launch,
};

/* An op of the test's own, outside the model: another op sequence. */
static int extra_op(struct tp_ctx *ctx)
{
	static char buf[64 << 10];
	size_t bytes = sizeof(buf);
	struct tp_tensor *x = tp_tensor_create(ctx, bytes, 0), *y = NULL;
	int rc;

	if (!x)
		return -errno;
	memset(buf, 7, sizeof(buf));
	rc = tp_tensor_write(ctx, x, 0, buf, bytes);
	if (!rc)
		rc = tp_op_run(ctx, &copy_op, NULL, 0, &x, 1, &y, &bytes, 1);
	tp_tensor_free(ctx, x);
	if (y)
		tp_tensor_free(ctx, y);
	return rc;
}

struct run {
	float loss[STEPS];
	void *params;
	size_t bytes;
	struct tp_stats st, at[STEPS];	/* after each iteration */
	int rc;
};

/* @extra: the test's own op in iteration EXTRA_OP_AT (host data only). */
static void train(const char *opts, uint64_t pin_bytes, bool extra,
		  struct run *r)
{
	struct tp_model_opts mo = { .name = "mlp", .seed = 5 };
	struct tp_ctx *ctx = tp_ctx_create(opts);
	struct tp_tensor *pin = NULL;
	struct tp_model *m;

	memset(r, 0, sizeof(*r));
	if (!ctx) {
		r->rc = -errno;
		return;
	}
	m = tp_model_create(ctx, &mo);
	if (!m) {
		r->rc = -errno;
		goto out;
	}
	for (unsigned i = 0; i < STEPS && !r->rc; i++) {
		if (i == PIN_AT && pin_bytes) {
			pin = tp_tensor_create(ctx, pin_bytes, 0);
			if (!pin || !tp_tensor_acquire(ctx, pin, TP_WRITE))
				r->rc = -ENOMEM;
		}
		if (!r->rc)
			r->rc = tp_iteration_begin(ctx);
		if (!r->rc && extra && i == EXTRA_OP_AT)
			r->rc = extra_op(ctx);
		if (!r->rc)
			r->rc = tp_model_step(m, &r->loss[i]);
		if (!r->rc)
			r->rc = tp_iteration_end(ctx);
		if (i == PIN_UNTIL && pin) {
			tp_tensor_release(ctx, pin);
			tp_tensor_free(ctx, pin);
			pin = NULL;
		}
		tp_stats_get(ctx, &r->at[i]);
	}
	/* the sim holds no data to read */
	if (!r->rc && !strstr(opts, "backend=sim")) {
		r->bytes = tp_model_param_bytes(m);
		r->params = malloc(r->bytes);
		r->rc = r->params ? tp_model_read_params(m, r->params, r->bytes)
				  : -ENOMEM;
	}
	tp_stats_get(ctx, &r->st);
	tp_model_destroy(m);
out:
	if (pin)
		tp_tensor_free(ctx, pin);
	tp_ctx_destroy(ctx);
}

static bool same_weights(const struct run *a, const struct run *b)
{
	return !a->rc && !b->rc && a->bytes == b->bytes && a->bytes &&
	       !memcmp(a->params, b->params, a->bytes) &&
	       !memcmp(a->loss, b->loss, sizeof(a->loss));
}

/* What one iteration of @r added to counter @f of struct tp_stats. */
#define ITER(r, i, f) ((r)->at[i].f - ((i) ? (r)->at[(i) - 1].f : 0))

static void host_training(void)
{
	const char *base = "vmm.backend=host,vmm.chunk_size=16K,"
			   "pager.host_budget=1G,policy.link_bandwidth=0.05";
	struct run full, dyn, planned;
	char opts[512];
	uint64_t budget, pin;

	snprintf(opts, sizeof(opts), "%s,pager.budget=1G", base);
	train(opts, 0, true, &full);
	if (!ok_rc(full.rc, "mlp: %d steps unconstrained", STEPS)) {
		skip(9, "no reference run");
		return;
	}
	/*
	 * Seventeen thirty-seconds of the peak (18 chunks of 16 KiB): with
	 * an eighth of it pinned, half (17) leaves the largest op and the
	 * regenerations its inputs need one chunk short, since the tape
	 * frees what no backward op reads and the peak fell by one.
	 */
	budget = full.st.phys_peak * 17 / 32;
	pin = budget / 8;
	snprintf(opts, sizeof(opts), "%s,pager.budget=%llu", base,
		 (unsigned long long)budget);
	train(opts, pin, true, &dyn);
	ok_rc(dyn.rc, "mlp under %llu bytes, dynamic policy",
	      (unsigned long long)budget);
	snprintf(opts, sizeof(opts), "%s,pager.budget=%llu,policy.plan=tsplit",
		 base, (unsigned long long)budget);
	train(opts, pin, true, &planned);
	ok_rc(planned.rc, "mlp under %llu bytes, planned: an extra op in iteration %d, %llu bytes pinned in %d-%d, no error",
	      (unsigned long long)budget, EXTRA_OP_AT,
	      (unsigned long long)pin, PIN_AT, PIN_UNTIL);
	diag("planned: %llu plans, %llu hits, %llu fallbacks, %llu breaks; %llu evictions, %llu offloads, %llu split runs; dynamic: %llu evictions, %llu offloads, %llu split runs",
	     (unsigned long long)planned.st.plans,
	     (unsigned long long)planned.st.plan_hits,
	     (unsigned long long)planned.st.plan_fallbacks,
	     (unsigned long long)planned.st.plan_breaks,
	     (unsigned long long)planned.st.evictions,
	     (unsigned long long)planned.st.offloads,
	     (unsigned long long)planned.st.split_runs,
	     (unsigned long long)dyn.st.evictions,
	     (unsigned long long)dyn.st.offloads,
	     (unsigned long long)dyn.st.split_runs);
	for (unsigned i = 0; i < STEPS; i++)
		diag("iteration %u: %llu hits, %llu fallbacks, %llu breaks, %llu decisions, dynamic %llu decisions",
		     i, (unsigned long long)ITER(&planned, i, plan_hits),
		     (unsigned long long)ITER(&planned, i, plan_fallbacks),
		     (unsigned long long)ITER(&planned, i, plan_breaks),
		     (unsigned long long)ITER(&planned, i, policy_decisions),
		     (unsigned long long)ITER(&dyn, i, policy_decisions));
	ok(same_weights(&planned, &full) && same_weights(&dyn, &full),
	   "the same losses and final weights, bit for bit, planned, dynamic and unconstrained");
	ok(planned.st.plans >= STEPS - 3 && !dyn.st.plans &&
	   !dyn.st.plan_hits && !dyn.st.plan_fallbacks,
	   "a plan made at the end of every iteration that followed one (%llu), none without policy.plan",
	   (unsigned long long)planned.st.plans);
	ok(ITER(&planned, 3, plan_hits) > 0 && !ITER(&planned, 3, plan_breaks),
	   "iteration 3 follows the record: the plan holds and chooses (%llu hits, %llu fallbacks)",
	   (unsigned long long)ITER(&planned, 3, plan_hits),
	   (unsigned long long)ITER(&planned, 3, plan_fallbacks));
	ok(ITER(&planned, EXTRA_OP_AT, plan_breaks) == 1 &&
	   ITER(&planned, EXTRA_OP_AT + 1, plan_breaks) == 1,
	   "an op the record does not have breaks the plan, and so does its absence in the next iteration");
	ok(ITER(&planned, PIN_AT, plan_breaks) == 1 &&
	   !ITER(&planned, PIN_UNTIL, plan_breaks) &&
	   ITER(&planned, PIN_UNTIL + 1, plan_breaks) == 1,
	   "room taken by a pinned tensor breaks the plan; the next plan is made for it; its release breaks that one");
	ok(ITER(&planned, EXTRA_OP_AT, plan_fallbacks) > 0,
	   "where the plan broke the filter and director chose (%llu)",
	   (unsigned long long)ITER(&planned, EXTRA_OP_AT, plan_fallbacks));
	ok(ITER(&planned, STEPS - 1, plan_hits) > 0 &&
	   !ITER(&planned, STEPS - 1, plan_breaks),
	   "the last iteration repeats the one before: its plan holds again");
	free(full.params);
	free(dyn.params);
	free(planned.params);
}

static void quiet(enum tp_log_level level, const char *msg, void *priv)
{
	(void)level;
	(void)msg;
	(void)priv;
}

/* A shipped trace in steady iterations on the sim: the plan holds. */
static void sim_trace(void)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	const char *top = getenv("top_srcdir");
	struct tp_trace_summary sum;
	struct tp_trace_error err;
	struct tp_replay_result r;
	struct tp_trace *t = NULL;
	char path[4096], msg[512];
	int rc;
	struct tp_replay_opts o = {
		.filter = "overlap", .director = "delta-overlap",
		.prefetch = -1, .remap_ns = -1, .warmup = 2, .iterations = 2,
		.extra = "vmm.sim.driver_granule=2M,policy.plan=tsplit",
	};

	snprintf(path, sizeof(path), "%s/traces/vgg16-b128.trace",
		 top ? top : "..");
	tp_set_log(quiet, NULL);
	if (tp_trace_load(path, &fmt, &t, &err) || tp_trace_peak(t, &sum)) {
		skip(2, "%s", tp_trace_error_str(&err, msg, sizeof(msg)));
		tp_trace_free(t);
		tp_set_log(NULL, NULL);
		return;
	}
	o.budget_bytes = sum.peak_bytes / 2;
	rc = tp_replay_run(t, &o, &r);	/* before ok() reads r */
	ok(!rc && r.status == TP_REPLAY_OK &&
	   r.phys_peak <= o.budget_bytes,
	   "vgg16 at 50%% planned: fits (%.3f ms, peak %llu)",
	   r.time_ns / 1e6, (unsigned long long)r.phys_peak);
	ok(r.plans >= 1 && r.plan_hits > 0 && !r.plan_breaks &&
	   r.plan_fallbacks * 10 < r.plan_hits,
	   "its measured iterations follow their plans (%llu): %llu hits, %llu fallbacks, %llu breaks",
	   (unsigned long long)r.plans, (unsigned long long)r.plan_hits,
	   (unsigned long long)r.plan_fallbacks,
	   (unsigned long long)r.plan_breaks);
	tp_trace_free(t);
	tp_set_log(NULL, NULL);
}

/*
 * The model on the sim: its input has no data, so the first op of each
 * iteration is the first to acquire it. The op's inputs are named at its
 * end then, and the plan holds.
 */
static void sim_training(void)
{
	const char *base = "vmm.backend=sim,vmm.chunk_size=16K";
	struct run full, planned;
	char opts[512];

	snprintf(opts, sizeof(opts), "%s,pager.budget=1G", base);
	train(opts, 0, false, &full);
	if (!ok_rc(full.rc, "mlp on the sim: %d steps unconstrained", STEPS)) {
		skip(1, "no reference run");
		return;
	}
	snprintf(opts, sizeof(opts), "%s,pager.budget=%llu,policy.plan=tsplit",
		 base, (unsigned long long)full.st.phys_peak / 2);
	train(opts, 0, false, &planned);
	ok(!planned.rc && ITER(&planned, 3, plan_hits) > 0 &&
	   !planned.st.plan_breaks && ITER(&planned, 3, evictions) +
	   ITER(&planned, 3, offloads) > 0,
	   "mlp on the sim at half its peak, planned: the plan holds in every iteration (%llu breaks; iteration 3: %llu hits, %llu fallbacks, %llu evictions, %llu offloads)",
	   (unsigned long long)planned.st.plan_breaks,
	   (unsigned long long)ITER(&planned, 3, plan_hits),
	   (unsigned long long)ITER(&planned, 3, plan_fallbacks),
	   (unsigned long long)ITER(&planned, 3, evictions),
	   (unsigned long long)ITER(&planned, 3, offloads));
	free(full.params);
	free(planned.params);
}

static char last_log[512];

static void keep(enum tp_log_level level, const char *msg, void *priv)
{
	(void)priv;
	if (level <= TP_LOG_ERROR)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void bad_config(void)
{
	struct tp_ctx *ctx;
	char buf[64];

	tp_set_log(keep, NULL);
	last_log[0] = 0;
	ctx = tp_ctx_create("vmm.backend=host,policy.plan=tspilt");
	ok(!ctx && errno == EINVAL && strstr(last_log, "policy.plan") &&
	   strstr(last_log, "tspilt") && strstr(last_log, "tsplit"),
	   "policy.plan=tspilt: EINVAL, the key, the value and what it takes named (%s)",
	   last_log);
	tp_ctx_destroy(ctx);
	ctx = tp_ctx_create("vmm.backend=host");
	if (!ctx)
		bail_out("a host context");
	ok(tp_ctl_set(ctx, "policy.plan", "yes") == -EINVAL &&
	   !tp_ctl_get(ctx, "policy.plan", buf, sizeof(buf)) &&
	   !strcmp(buf, "off"),
	   "tp_ctl_set(policy.plan, yes): -EINVAL, still off");
	ok(!tp_ctl_set(ctx, "policy.plan", "tsplit") &&
	   !tp_ctl_get(ctx, "policy.plan", buf, sizeof(buf)) &&
	   !strcmp(buf, "tsplit"),
	   "tp_ctl_set(policy.plan, tsplit) at run time");
	tp_ctx_destroy(ctx);
	tp_set_log(NULL, NULL);
}

int main(void)
{
	plan_tests(10 + 2 + 2 + 3);
	host_training();
	sim_trace();
	sim_training();
	bad_config();
	return exit_status();
}
