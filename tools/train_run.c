// SPDX-License-Identifier: MIT
/*
 * tpager-train's runs: one training run under a budget (or none) and what
 * it gave, with the helpers that report a run (tools/train_run.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx/ctx.h"
#include "tools/train.h"
#include "tools/train_run.h"
#include "vmm/vmm.h"

/*
 * Host swap a run under @budget may take: pager.host_budget, or, on host
 * and cuda without one, the memory the machine had available when the
 * tool started, less on host the budget itself (the device memory of the
 * host backend is host memory too), so that a run that needs more fails
 * with a message rather than at the hands of the kernel's OOM killer.
 * At least one byte: pager.host_budget = 0 would mean no limit.
 */
static uint64_t host_limit(const struct train_args *a, uint64_t budget)
{
	uint64_t avail = a->mem_available;

	if (a->host_budget || !avail)
		return a->host_budget;
	if (!strcmp(a->backend, "host"))
		avail = avail > budget ? avail - budget : 1;
	return avail;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Step time: the backend's clock, which is virtual time on sim. */
static double clock_s(struct tp_ctx *ctx)
{
	return tp_vmm_now_ns(ctx->vmm) * 1e-9;
}

void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", b / 1073741824.0);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.2f MiB", b / 1048576.0);
	else
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values (sorts them). */
static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * What the steps after the first cost each, from the stats at the end of
 * the first (@st0) and of the last: driver calls and time, and the share
 * of the step the compute stream spent on ops (measured on the device by
 * the ops' events on cuda, charged on sim).
 */
static void per_step(struct run *r, const struct tp_stats *st0, unsigned n)
{
	const struct tp_stats *st = &r->st;
	double busy = (double)(st->compute_ns - st0->compute_ns) +
		      (double)(st->recompute_ns - st0->recompute_ns);

	r->bg_calls = (double)(st->driver_bg_calls - st0->driver_bg_calls) / n;
	r->bg_s = (double)(st->driver_bg_ns - st0->driver_bg_ns) / n / 1e9;
	r->driver_calls = (double)(st->driver_calls - st0->driver_calls) / n -
			  r->bg_calls;
	r->driver_s = (double)(st->driver_ns - st0->driver_ns) / n / 1e9 -
		      r->bg_s;
	r->gpu_busy = r->step_s > 0 ? busy / n / 1e9 / r->step_s : 0;
	if (r->gpu_busy > 1)
		r->gpu_busy = 1;
}

/*
 * Train @steps steps of @batch under @budget bytes (0: no budget), the
 * program's ops refused from monotonic time @deadline on (0: none). With
 * @record, the steps are recorded into *@trace. A failed run keeps the
 * statistics and the library's message of the failure.
 */
void run_training(const struct train_args *a, unsigned batch,
		  unsigned steps, uint64_t budget, double deadline,
		  bool want_params, struct tp_trace **trace, struct run *r)
{
	struct tp_model_opts mo = a->mo;
	struct tp_model *m = NULL;
	struct tp_ctx *ctx;
	struct tp_stats st0 = { 0 };
	char opts[1024], peak[32];
	double t0, t_prev = 0, t_end, last_print = 0, start = now_s();
	double *step_times = NULL;
	unsigned i, n_times = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->loss_first = r->loss_last = NAN;
	mo.batch = batch;
	snprintf(opts, sizeof(opts), "vmm.backend=%s%s%s%s%s", a->backend,
		 a->chunk[0] ? ",vmm.chunk_size=" : "", a->chunk,
		 /* shapes only: device memory is what the budget says,
		  * unless a profile says what the device had */
		 !strcmp(a->backend, "sim") && !strstr(a->extra, "vmm.sim.profile=") &&
		 !strstr(a->extra, "vmm.device_memory=") ?
		 ",vmm.device_memory=4T" : "",
		 /* an op that does not fit whole runs in parts */
		 a->split_unset ? ",policy.split=on" : "");
	if (a->extra[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",%s", a->extra);
	if (budget) {
		r->host_limit = host_limit(a, budget);
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",pager.budget=%" PRIu64, budget);
		if (r->host_limit && !a->host_budget)
			snprintf(opts + strlen(opts),
				 sizeof(opts) - strlen(opts),
				 ",pager.host_budget=%" PRIu64, r->host_limit);
	}
	if (a->filter[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",policy.filter=%s", a->filter);
	if (a->director[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",policy.director=%s", a->director);
	last_msg[0] = 0;
	first_error[0] = 0;
	ctx = tp_ctx_create(opts);
	if (!ctx) {
		r->rc = -errno;
		r->what = "tp_ctx_create";
		snprintf(r->why, sizeof(r->why), "%s", last_msg);
		return;
	}
	tp_rec_deadline(deadline > 0 ? (uint64_t)(deadline * 1e9) : 0);
	if (trace) {
		rc = tp_rec_start(ctx, strcmp(a->backend, "sim") ?
				  TP_REC_MEASURED : TP_REC_MODELLED);
		if (rc) {
			r->rc = rc;
			r->what = "recording";
			goto out;
		}
	}
	m = tp_model_create(ctx, &mo);
	if (!m) {
		r->rc = -errno;
		r->what = "tp_model_create";
		goto out;
	}
	step_times = calloc(steps ? steps : 1, sizeof(*step_times));
	if (!step_times) {
		r->rc = -ENOMEM;
		r->what = "calloc";
		goto out;
	}
	t0 = clock_s(ctx);
	for (i = 0; i < steps; i++) {
		float loss = NAN;

		if (trace)
			tp_rec_iteration(steps > 1 && i == steps - 1);
		rc = tp_iteration_begin(ctx);
		if (!rc)
			rc = tp_model_step(m, &loss);
		if (!rc)
			rc = tp_iteration_end(ctx);
		if (rc) {
			r->rc = rc;
			r->what = "training step";
			goto out;
		}
		if (!i) {
			r->loss_first = loss;
			/*
			 * Timed from the second step: the first pays what
			 * only comes once (first touch of the memory, the
			 * BLAS threads starting, the prefetcher with nothing
			 * learnt yet), in whichever run comes first.
			 */
			if (steps > 1 && !(rc = tp_sync(ctx))) {
				t0 = t_prev = clock_s(ctx);
				tp_stats_get(ctx, &st0);
			}
			if (rc) {
				r->rc = rc;
				r->what = "tp_sync";
				goto out;
			}
		}
		r->loss_last = loss;
		/*
		 * Each later step as the host saw it end (no sync between
		 * steps: that would change what overlaps); the last ends at
		 * the final sync below.
		 */
		if (i && i + 1 < steps) {
			double end = clock_s(ctx);

			step_times[n_times++] = end - t_prev;
			t_prev = end;
		}
		/* progress once a second for the runs that take that long */
		if (!a->quiet && now_s() - last_print >= 1.0 &&
		    now_s() - start >= 1.0) {
			tp_stats_get(ctx, &r->st);
			fmt_bytes(peak, sizeof(peak), r->st.phys_peak);
			fprintf(stderr, "%s: %s step %u/%u loss %.5f peak %s\n",
				prog, budget ? "budgeted" : "unconstrained", i + 1, steps,
				loss, peak);
			last_print = now_s();
		}
	}
	rc = tp_sync(ctx);
	if (rc) {
		r->rc = rc;
		r->what = "tp_sync";
		goto out;
	}
	t_end = clock_s(ctx);
	r->step_s = steps > 1 ? (t_end - t0) / (steps - 1) :
		    steps ? t_end - t0 : 0;
	if (steps > 1)
		step_times[n_times++] = t_end - t_prev;
	r->step_median_s = n_times ? median(step_times, n_times) : r->step_s;
	tp_stats_get(ctx, &r->st);
	per_step(r, &st0, steps > 1 ? steps - 1 : 1);
	if (trace) {
		rc = tp_rec_stop(trace);
		if (rc) {
			r->rc = rc;
			r->what = "recording";
			goto out;
		}
	}
	if (want_params && strcmp(a->backend, "sim")) {
		r->param_bytes = tp_model_param_bytes(m);
		r->params = malloc(r->param_bytes ? r->param_bytes : 1);
		if (!r->params) {
			r->rc = -ENOMEM;
			r->what = "malloc";
			goto out;
		}
		rc = tp_model_read_params(m, r->params, r->param_bytes);
		if (rc) {
			r->rc = rc;
			r->what = "tp_model_read_params";
			goto out;
		}
		r->have_params = true;
	}
out:
	free(step_times);
	tp_rec_deadline(0);
	if (r->rc) {
		/* The context's last error is the verdict (an op that could
		 * not take an input whole may still have been split). */
		tp_stats_get(ctx, &r->st);
		snprintf(r->why, sizeof(r->why), "%s",
			 r->rc == -ETIMEDOUT ? "stopped at the time limit" :
			 tp_last_error(ctx)[0] ? tp_last_error(ctx) :
			 last_msg);
		/* Where a device call failed first, its word too: the
		 * verdict names only the op it broke. */
		if (first_error[0] && !strstr(r->why, first_error))
			snprintf(r->why + strlen(r->why),
				 sizeof(r->why) - strlen(r->why),
				 " (first error: %s)", first_error);
	}
	if (trace && !*trace) {
		struct tp_trace *t = NULL;

		tp_rec_stop(&t);
		tp_trace_free(t);
	}
	tp_model_destroy(m);
	tp_ctx_destroy(ctx);
}

void run_error(const struct train_args *a, const char *which,
	       unsigned batch, const struct run *r)
{
	fprintf(stderr, "%s: %s run of %s (batch %u) failed in %s: %s%s%s\n",
		prog, which, a->model, batch, r->what,
		tp_strerror(r->rc), r->why[0] ? ": " : "", r->why);
}

/*
 * Whether @r failed for want of host swap: the pager blamed the swap
 * (stats.swap_full), or the run filled it to its limit before it ran out
 * of memory (a path that fails without asking the swap first, such as
 * lineage keeping what an overwritten tensor made, is then short of it
 * too).
 */
bool swap_failed(const struct run *r)
{
	return r->rc == -ENOMEM &&
	       (r->st.swap_full ||
		(r->host_limit && r->st.host_peak >= r->host_limit));
}

/* The host swap limit @r ran under, named as its user set or knows it. */
static void fmt_host_limit(const struct train_args *a, const struct run *r,
			   char *buf, size_t len)
{
	char b[32];

	fmt_bytes(b, sizeof(b), r->host_limit);
	if (a->host_budget)
		snprintf(buf, len, "pager.host_budget = %s", b);
	else
		snprintf(buf, len, "the %s of memory the machine had available%s",
			 b, strcmp(a->backend, "host") ? "" :
			 " beside the budget");
}

/* The one line of a run that host swap could not hold. */
void swap_error(const struct train_args *a, unsigned batch,
		const struct run *r)
{
	char lim[96], used[32];

	fmt_host_limit(a, r, lim, sizeof(lim));
	fmt_bytes(used, sizeof(used), r->st.host_peak);
	fprintf(stderr, "%s: host swap is full: %s cannot hold what %s at batch %u must offload (it reached %s)%s%s\n",
		prog, lim, a->model, batch, used, r->why[0] ? ": " : "",
		r->why);
}

uint64_t budget_of(const struct train_args *a, uint64_t peak)
{
	if (!a->budget_percent)
		return a->budget_bytes;
	return (uint64_t)((double)peak * a->budget_pct / 100.0);
}

/* Samples a second at the time per step, 0 where there is none. */
double images_per_s(unsigned batch, const struct run *r)
{
	return r->step_s > 0 ? batch / r->step_s : 0;
}

/* One row of the report: the unconstrained run's count, the budgeted one's. */
static void row_u64(const char *name, uint64_t u, uint64_t c)
{
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", name, u, c);
}

/* One row of the report, in bytes. */
static void row_bytes(const char *name, uint64_t u, uint64_t c)
{
	char b1[32], b2[32];

	fmt_bytes(b1, sizeof(b1), u);
	fmt_bytes(b2, sizeof(b2), c);
	printf("%-22s %16s %16s\n", name, b1, b2);
}

/* @s as a JSON string, or null. */
void json_str(const char *s)
{
	if (!s || !*s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* The filter and director in force at the end of @r: policy.tune's. */
static void tuned_pair(const struct run *r, char *out, size_t len)
{
	if (tp_ctx_pair_in_force(&r->st, out, len))
		snprintf(out, len, "?");
}

static void print_json_run(const char *name, unsigned batch,
			   const struct run *r, bool gpu_timed, bool last)
{
	char tuned[72];

	tuned_pair(r, tuned, sizeof(tuned));
	printf("\"%s\":{\"phys_peak\":%" PRIu64 ",\"held_peak\":%" PRIu64
	       ",\"device_peak\":%" PRIu64
	       ",\"step_s\":%.6f,\"step_median_s\":%.6f,\"images_per_s\":%.3f"
	       ",\"loss_first\":",
	       name, r->st.phys_peak, r->st.held_peak, r->st.device_peak,
	       r->step_s, r->step_median_s, images_per_s(batch, r));
	if (isfinite(r->loss_first))
		printf("%.9g,\"loss_last\":%.9g", r->loss_first, r->loss_last);
	else
		printf("null,\"loss_last\":null");
	printf(",\"evictions\":%" PRIu64 ",\"offloads\":%" PRIu64
	       ",\"reloads\":%" PRIu64 ",\"bytes_d2h\":%" PRIu64
	       ",\"bytes_h2d\":%" PRIu64 ",\"recomputes\":%" PRIu64
	       ",\"prefetch_hits\":%" PRIu64 ",\"stall_ns\":%" PRIu64
	       ",\"recompute_ns\":%" PRIu64 ",\"compute_ns\":%" PRIu64
	       ",\"driver_calls\":%" PRIu64 ",\"driver_ns\":%" PRIu64
	       ",\"range_cache_misses\":%" PRIu64 ",\"policy_ns\":%" PRIu64
	       ",\"handles\":%" PRIu64 ",\"recarves\":%" PRIu64
	       ",\"rescued_pages\":%" PRIu64
	       ",\"ranges_moved\":%" PRIu64 ",\"ranges_adopted\":%" PRIu64
	       ",\"split_runs\":%" PRIu64 ",\"split_parts\":%" PRIu64
	       ",\"rows_regenerated\":%" PRIu64
	       ",\"gate_waits\":%" PRIu64 ",\"gate_device\":%" PRIu64
	       ",\"host_peak\":%" PRIu64 ",\"host_held\":%" PRIu64
	       ",\"host_limit\":%" PRIu64
	       ",\"driver_calls_per_step\":%.1f,\"driver_s_per_step\":%.6f"
	       ",\"driver_bg_calls_per_step\":%.1f"
	       ",\"driver_bg_s_per_step\":%.6f,\"tune_trials\":%" PRIu64
	       ",\"in_force\":\"%s\",\"gpu_busy\":",
	       r->st.evictions, r->st.offloads, r->st.reloads,
	       r->st.bytes_d2h, r->st.bytes_h2d, r->st.recomputes, r->st.prefetch_hits, r->st.stall_ns,
	       r->st.recompute_ns, r->st.compute_ns, r->st.driver_calls,
	       r->st.driver_ns, r->st.range_cache_misses, r->st.policy_ns,
	       r->st.handles, r->st.recarves, r->st.rescued_pages,
	       r->st.ranges_moved, r->st.ranges_adopted, r->st.split_runs,
	       r->st.split_parts, r->st.rows_regenerated, r->st.gate_waits,
	       r->st.gate_device, r->st.host_peak,
	       r->st.host_held, r->host_limit, r->driver_calls, r->driver_s, r->bg_calls,
	       r->bg_s, r->st.tune_trials, tuned);
	/* Only where the compute stream is timed: on the device or sim. */
	if (gpu_timed)
		printf("%.4f}%s", r->gpu_busy, last ? "" : ",");
	else
		printf("null}%s", last ? "" : ",");
}

void report(const struct train_args *a, uint64_t budget,
	    const struct run *u, const struct run *c, int same)
{
	double saved = u->st.phys_peak ?
		100.0 * ((double)u->st.phys_peak - (double)c->st.phys_peak) /
		(double)u->st.phys_peak : 0;
	double over = u->step_s > 0 ? 100.0 * (c->step_s / u->step_s - 1) : 0;
	const char *w = same < 0 ? "n/a (no data)" : same ? "yes" : "NO";
	bool gpu = strcmp(a->backend, "host") != 0;
	char b1[32], b3[32];

	if (a->json) {
		printf("{\"model\":\"%s\",\"depth\":%u,\"backend\":\"%s\","
		       "\"batch\":%u,\"steps\":%u,\"budget_bytes\":%" PRIu64 ",",
		       a->model, a->mo.depth, a->backend, a->mo.batch,
		       a->steps, budget);
		print_json_run("unconstrained", a->mo.batch, u, gpu, false);
		print_json_run("budget", a->mo.batch, c, gpu, false);
		printf("\"saved_pct\":%.3f,\"overhead_pct\":%.3f,"
		       "\"weights_identical\":%s}\n", saved, over,
		       same < 0 ? "null" : same ? "true" : "false");
		return;
	}
	fmt_bytes(b1, sizeof(b1), budget);
	printf("tpager-train: %s%s%.0u, batch %u, %u steps, %s backend, budget %s",
	       a->model, a->mo.depth ? "-" : "", a->mo.depth, a->mo.batch,
	       a->steps, a->backend, b1);
	if (a->budget_percent)
		printf(" (%g%% of the unconstrained peak)", a->budget_pct);
	printf("\n\n%-22s %16s %16s\n", "", "unconstrained", "budget");
	row_bytes("physical peak", u->st.phys_peak, c->st.phys_peak);
	fmt_bytes(b3, sizeof(b3), u->st.phys_peak > c->st.phys_peak ?
		  u->st.phys_peak - c->st.phys_peak : 0);
	printf("%-22s %16s %16s (%.1f%%)\n", "memory saved", "", b3, saved);
	printf("%-22s %13.3f ms %13.3f ms\n", "time per step",
	       u->step_s * 1e3, c->step_s * 1e3);
	printf("%-22s %16.1f %16.1f\n", "samples per second",
	       images_per_s(a->mo.batch, u), images_per_s(a->mo.batch, c));
	printf("%-22s %16s %15.1f%%\n", "overhead", "", over);
	/* Counted in tensors, whatever their pages (tp_stats_get(3)). */
	row_u64("tensors evicted", u->st.evictions, c->st.evictions);
	row_u64("tensors offloaded", u->st.offloads, c->st.offloads);
	row_u64("tensors reloaded", u->st.reloads, c->st.reloads);
	row_bytes("copied to host", u->st.bytes_d2h, c->st.bytes_d2h);
	row_bytes("copied back", u->st.bytes_h2d, c->st.bytes_h2d);
	row_u64("ops recomputed", u->st.recomputes, c->st.recomputes);
	row_u64("pages rescued", u->st.rescued_pages, c->st.rescued_pages);
	row_u64("prefetch hits", u->st.prefetch_hits, c->st.prefetch_hits);
	row_u64("split runs", u->st.split_runs, c->st.split_runs);
	row_bytes("host swap peak", u->st.host_peak, c->st.host_peak);
	row_bytes("host swap held", u->st.host_held, c->st.host_held);
	printf("%-22s %16.1f %16.1f\n", "driver calls per step",
	       u->driver_calls, c->driver_calls);
	printf("%-22s %13.3f ms %13.3f ms\n", "driver time per step",
	       u->driver_s * 1e3, c->driver_s * 1e3);
	printf("%-22s %13.3f ms %13.3f ms\n", "  on the driver thread",
	       u->bg_s * 1e3, c->bg_s * 1e3);
	if (gpu)
		printf("%-22s %15.1f%% %15.1f%%\n", "compute stream busy",
		       u->gpu_busy * 100, c->gpu_busy * 100);
	if (c->st.tune_trials) {
		char tuned[72];

		tuned_pair(c, tuned, sizeof(tuned));
		printf("%-22s %33s\n", "policy in force", tuned);
		printf("%-22s %16s %16" PRIu64 "\n", "pairs timed (tune)", "",
		       c->st.tune_trials);
	}
	printf("%-22s %16.6f %16.6f\n", "loss, first step", u->loss_first,
	       c->loss_first);
	printf("%-22s %16.6f %16.6f\n", "loss, last step", u->loss_last,
	       c->loss_last);
	printf("%-22s %33s\n", "weights bit-identical", w);
}
