// SPDX-License-Identifier: MIT
/*
 * tpager-train: train a model from kernels/ twice with the same seed,
 * without a budget and under one, and show what the pager bought (memory)
 * and cost (time), and that the final weights are the same bits. With
 * --max-batch, search the largest batch that trains under the budget with
 * and without paging. With --trace-out, write the unconstrained run as a
 * tpager-trace(5) file (tools/train_record.c).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "kernels/models.h"
#include "tools/train.h"
#include "tpager.h"
#include "trace/trace.h"
#include "vmm/vmm.h"
#include "ctl/conf.h"
#include "tools/cli.h"

#define MAX_BATCH_LIMIT	(1u << 20)

struct train_args {
	struct tp_model_opts mo;
	char model[32];
	unsigned steps;
	bool have_batch, have_steps, have_budget, have_model;
	bool budget_percent;
	double budget_pct;
	uint64_t budget_bytes;
	char filter[16], director[16];
	char backend[8];		/* resolved: cuda, host or sim */
	char chunk[32];
	const char *trace_out;
	bool json, max_batch, quiet;
	char extra[512];		/* --set KEY=VALUE, comma-joined */
	struct tp_conf conf;		/* the defaults and --set, to check
					 * them before any run */
};

/* What one run gave. */
struct run {
	int rc;
	const char *what;		/* the call that failed */
	struct tp_stats st;
	double step_s;			/* mean wall time of a step
					 * after the first */
	/* per step after the first: driver calls and their time on the
	 * thread that issues the ops and on the library's driver thread,
	 * and the fraction of the step the compute stream was busy */
	double driver_calls, driver_s, bg_calls, bg_s, gpu_busy;
	float loss_first, loss_last;
	void *params;
	size_t param_bytes;
	bool have_params;
};

const char *prog = "tpager-train";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--model mlp|resnet-mini|resnet|vgg16|bert] [--depth N]\n"
		"       [--layers N] [--hidden N] [--heads N] [--seq N] [--image N]\n"
		"       [--classes N] [--batch N] [--steps N] [--budget B|P%%] [--policy FILTER[/DIRECTOR]]\n"
		"       [--backend auto|host|cuda|sim] [--seed N] [--optim sgd|adam]\n"
		"       [--lr X] [--chunk-size B] [--set KEY=VALUE]... [--trace-out FILE]\n"
		"       [--json] [--quiet] [--max-batch]\n", prog);
}

static unsigned opt_uint(const char *name, const char *s, unsigned min,
			 unsigned max)
{
	unsigned long long v;

	if (!parse_uint(s, max, &v) || v < min)
		die("--%s: '%s' is not a number from %u to %u", name, s, min,
		    max);
	return (unsigned)v;
}

static void parse_budget(struct train_args *a, const char *s)
{
	size_t len = strlen(s);
	char *end;

	a->have_budget = true;
	if (len > 1 && s[len - 1] == '%') {
		errno = 0;
		a->budget_pct = strtod(s, &end);
		if (errno || end != s + len - 1 || !(a->budget_pct > 0) ||
		    a->budget_pct > 100 || *s < '0' || *s > '9')
			die("--budget: '%s' is not a percent in (0, 100]", s);
		a->budget_percent = true;
		return;
	}
	if (!parse_bytes(s, &a->budget_bytes))
		die("--budget: '%s' is neither bytes (K/M/G/T) nor a percent",
		    s);
	if (!a->budget_bytes)
		die("--budget: a budget of 0 bytes holds nothing (give bytes above 0 or a percent in (0, 100])");
}

static void parse_policy(struct train_args *a, const char *s)
{
	static const char *const filters[] = {
		"delta", "lru", "greedy", "dtr", "msps", "coop", "overlap",
	};
	static const char *const directors[] = {
		"delta", "delta-overlap", "evict", "offload",
	};
	const char *slash = strchr(s, '/');
	size_t flen = slash ? (size_t)(slash - s) : strlen(s), i;
	bool ok = false;

	for (i = 0; i < sizeof(filters) / sizeof(*filters); i++)
		if (strlen(filters[i]) == flen && !strncmp(s, filters[i], flen))
			ok = true;
	if (!ok)
		die("--policy: unknown filter '%.*s' (delta, lru, greedy, dtr, msps, coop, overlap)",
		    (int)flen, s);
	snprintf(a->filter, sizeof(a->filter), "%.*s", (int)flen, s);
	if (!slash)
		return;
	ok = false;
	for (i = 0; i < sizeof(directors) / sizeof(*directors); i++)
		if (!strcmp(slash + 1, directors[i]))
			ok = true;
	if (!ok)
		die("--policy: unknown director '%s' (delta, delta-overlap, evict, offload)",
		    slash + 1);
	snprintf(a->director, sizeof(a->director), "%s", slash + 1);
}

/* resnet-50, resnet50 and bert-base name a layout. */
static void parse_model(struct train_args *a, const char *s)
{
	static const char *const names[] = {
		"mlp", "resnet-mini", "resnet", "vgg16", "bert",
	};
	unsigned long long d;
	size_t i;

	a->have_model = true;
	if (!strncmp(s, "resnet", 6) && strcmp(s, "resnet-mini") && s[6]) {
		const char *n = s + 6 + (s[6] == '-');

		if (!parse_uint(n, 1000, &d) || (d != 18 && d != 34 &&
						  d != 50 && d != 101))
			die("--model: unknown model '%s'", s);
		a->mo.depth = (unsigned)d;
		s = "resnet";
	} else if (!strcmp(s, "bert-base")) {
		a->mo.layers = 12;
		a->mo.hidden = 768;
		a->mo.heads = 12;
		a->mo.seq = 512;
		a->mo.vocab = 30522;
		s = "bert";
	}
	for (i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (!strcmp(s, names[i]))
			break;
	if (i == sizeof(names) / sizeof(*names))
		die("--model: unknown model '%s' (mlp, resnet-mini, resnet[-18|34|50|101], vgg16, bert[-base])",
		    s);
	snprintf(a->model, sizeof(a->model), "%s", s);
}

/* The first library message of a failed call, for a one-line error. */
static char last_msg[256];

/*
 * A key and value of tpager.conf(5), checked now as tp_ctx_create would
 * check them, so that a bad one is a bad argument (exit 2) named by its
 * option, not a failed run. The keys each run sets itself are refused.
 */
static void add_extra(struct train_args *a, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t len = strlen(a->extra);
	char key[128];

	if (!eq || strchr(kv, ',') || eq == kv ||
	    (size_t)(eq - kv) >= sizeof(key))
		die("--set: '%s' is not KEY=VALUE", kv);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
	if (!strcmp(key, "pager.budget") || !strcmp(key, "vmm.backend"))
		die("--set: %s differs between the runs: use --%s", key,
		    key[0] == 'p' ? "budget" : "backend");
	last_msg[0] = 0;
	if (tp_conf_set(&a->conf, key, eq + 1, "--set", 0))
		die("%s", last_msg[0] ? last_msg : "--set: bad setting");
	if (len + strlen(kv) + 2 > sizeof(a->extra))
		die("--set: too many settings");
	snprintf(a->extra + len, sizeof(a->extra) - len, "%s%s",
		 len ? "," : "", kv);
}

static void quiet_log(enum tp_log_level level, const char *msg, void *priv)
{
	(void)level;
	(void)msg;
	(void)priv;
}

static void keep_log(enum tp_log_level level, const char *msg, void *priv)
{
	(void)priv;
	if (level <= TP_LOG_WARN && !last_msg[0])
		snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

/* auto: cuda when a context opens on it, else host. */
static void resolve_backend(struct train_args *a)
{
	struct tp_ctx *ctx;

	if (strcmp(a->backend, "auto"))
		return;
	tp_set_log(quiet_log, NULL);
	ctx = tp_ctx_create("vmm.backend=cuda");
	tp_set_log(keep_log, NULL);
	snprintf(a->backend, sizeof(a->backend), "%s", ctx ? "cuda" : "host");
	tp_ctx_destroy(ctx);
}

/* Defaults that depend on the backend (see tpager-train(1)). */
static void defaults(struct train_args *a)
{
	bool gpu = !strcmp(a->backend, "cuda");

	if (!a->have_model) {
		if (gpu) {
			snprintf(a->model, sizeof(a->model), "resnet");
			a->mo.depth = 50;
		} else {
			snprintf(a->model, sizeof(a->model), "resnet-mini");
		}
	}
	/* the models' own defaults, but for a resnet-mini step long enough
	 * to time and a ResNet-50 batch that makes a GPU work */
	if (!a->have_batch) {
		if (!strcmp(a->model, "resnet-mini") || !strcmp(a->model, "mlp"))
			a->mo.batch = 32;
		else if (!strcmp(a->model, "bert"))
			a->mo.batch = 4;
		else
			a->mo.batch = gpu && !strcmp(a->model, "resnet") ? 128 : 32;
	}
	if (!a->have_steps)
		a->steps = gpu ? 10 : 20;
	if (!a->have_budget) {
		a->budget_percent = true;
		a->budget_pct = 50;
	}
	/*
	 * Chunks on host: 64K keeps a resnet-mini budget tens of chunks wide
	 * without paying a mapping call per few KiB; the mlp's whole step is
	 * half a MiB, so it takes 16K. cuda uses the device granularity, sim
	 * the library's default but for those two small models.
	 */
	if (!a->chunk[0] && !gpu && (strcmp(a->backend, "sim") ||
				     !strcmp(a->model, "mlp") ||
				     !strcmp(a->model, "resnet-mini")))
		snprintf(a->chunk, sizeof(a->chunk), "%s",
			 !strcmp(a->model, "mlp") ? "16K" : "64K");
	a->mo.name = a->model;
}

static double now_s(void)
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

static void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", b / 1073741824.0);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.2f MiB", b / 1048576.0);
	else
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
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
 * Train @steps steps of @batch under @budget bytes (0: no budget). With
 * @record, the steps are recorded into *@trace.
 */
static void run_training(const struct train_args *a, unsigned batch,
			 unsigned steps, uint64_t budget, bool want_params,
			 struct tp_trace **trace, struct run *r)
{
	struct tp_model_opts mo = a->mo;
	struct tp_model *m = NULL;
	struct tp_ctx *ctx;
	struct tp_stats st0 = { 0 };
	char opts[1024], peak[32];
	double t0, last_print = 0, start = now_s();
	unsigned i;
	int rc;

	memset(r, 0, sizeof(*r));
	r->loss_first = r->loss_last = NAN;
	mo.batch = batch;
	snprintf(opts, sizeof(opts), "vmm.backend=%s%s%s%s%s", a->backend,
		 a->chunk[0] ? ",vmm.chunk_size=" : "", a->chunk,
		 /* shapes only: device memory is what the budget says */
		 !strcmp(a->backend, "sim") ? ",vmm.device_memory=4T" : "",
		 a->extra[0] ? "," : "");
	snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts), "%s",
		 a->extra);
	if (budget)
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",pager.budget=%" PRIu64, budget);
	if (a->filter[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",policy.filter=%s", a->filter);
	if (a->director[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
			 ",policy.director=%s", a->director);
	last_msg[0] = 0;
	ctx = tp_ctx_create(opts);
	if (!ctx) {
		r->rc = -errno;
		r->what = "tp_ctx_create";
		return;
	}
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
				t0 = clock_s(ctx);
				tp_stats_get(ctx, &st0);
			}
			if (rc) {
				r->rc = rc;
				r->what = "tp_sync";
				goto out;
			}
		}
		r->loss_last = loss;
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
	r->step_s = steps > 1 ? (clock_s(ctx) - t0) / (steps - 1) :
		    steps ? clock_s(ctx) - t0 : 0;
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
	if (trace && !*trace) {
		struct tp_trace *t = NULL;

		tp_rec_stop(&t);
		tp_trace_free(t);
	}
	tp_model_destroy(m);
	tp_ctx_destroy(ctx);
}

static void run_error(const struct train_args *a, const char *which,
		      unsigned batch, const struct run *r)
{
	fprintf(stderr, "%s: %s run of %s (batch %u) failed in %s: %s%s%s\n",
		prog, which, a->model, batch, r->what,
		tp_strerror(r->rc), last_msg[0] ? ": " : "", last_msg);
}

static uint64_t budget_of(const struct train_args *a, uint64_t peak)
{
	if (!a->budget_percent)
		return a->budget_bytes;
	return (uint64_t)((double)peak * a->budget_pct / 100.0);
}

static void print_json_run(const char *name, const struct run *r,
			   bool gpu_timed, bool last)
{
	printf("\"%s\":{\"phys_peak\":%" PRIu64 ",\"step_s\":%.6f,"
	       "\"loss_first\":", name, r->st.phys_peak, r->step_s);
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
	       ",\"driver_calls_per_step\":%.1f,\"driver_s_per_step\":%.6f"
	       ",\"driver_bg_calls_per_step\":%.1f"
	       ",\"driver_bg_s_per_step\":%.6f,\"gpu_busy\":",
	       r->st.evictions, r->st.offloads, r->st.reloads,
	       r->st.bytes_d2h, r->st.bytes_h2d, r->st.recomputes, r->st.prefetch_hits, r->st.stall_ns,
	       r->st.recompute_ns, r->st.compute_ns, r->st.driver_calls,
	       r->st.driver_ns, r->st.range_cache_misses, r->st.policy_ns,
	       r->st.handles, r->st.recarves, r->st.rescued_pages,
	       r->driver_calls, r->driver_s,
	       r->bg_calls, r->bg_s);
	/* Only where the compute stream is timed: on the device or sim. */
	if (gpu_timed)
		printf("%.4f}%s", r->gpu_busy, last ? "" : ",");
	else
		printf("null}%s", last ? "" : ",");
}

static void report(const struct train_args *a, uint64_t budget,
		   const struct run *u, const struct run *c, int same)
{
	double saved = u->st.phys_peak ?
		100.0 * ((double)u->st.phys_peak - (double)c->st.phys_peak) /
		(double)u->st.phys_peak : 0;
	double over = u->step_s > 0 ? 100.0 * (c->step_s / u->step_s - 1) : 0;
	const char *w = same < 0 ? "n/a (no data)" : same ? "yes" : "NO";
	bool gpu = strcmp(a->backend, "host") != 0;
	char b1[32], b2[32], b3[32];

	if (a->json) {
		printf("{\"model\":\"%s\",\"depth\":%u,\"backend\":\"%s\","
		       "\"batch\":%u,\"steps\":%u,\"budget_bytes\":%" PRIu64 ",",
		       a->model, a->mo.depth, a->backend, a->mo.batch,
		       a->steps, budget);
		print_json_run("unconstrained", u, gpu, false);
		print_json_run("budget", c, gpu, false);
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
	fmt_bytes(b1, sizeof(b1), u->st.phys_peak);
	fmt_bytes(b2, sizeof(b2), c->st.phys_peak);
	printf("%-22s %16s %16s\n", "physical peak", b1, b2);
	fmt_bytes(b3, sizeof(b3), u->st.phys_peak > c->st.phys_peak ?
		  u->st.phys_peak - c->st.phys_peak : 0);
	printf("%-22s %16s %16s (%.1f%%)\n", "memory saved", "", b3, saved);
	printf("%-22s %13.3f ms %13.3f ms\n", "time per step",
	       u->step_s * 1e3, c->step_s * 1e3);
	printf("%-22s %16s %15.1f%%\n", "overhead", "", over);
	/* Counted in tensors, whatever their pages (tp_stats_get(3)). */
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "tensors evicted",
	       u->st.evictions, c->st.evictions);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "tensors offloaded",
	       u->st.offloads, c->st.offloads);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "tensors reloaded",
	       u->st.reloads, c->st.reloads);
	fmt_bytes(b1, sizeof(b1), u->st.bytes_d2h);
	fmt_bytes(b2, sizeof(b2), c->st.bytes_d2h);
	printf("%-22s %16s %16s\n", "copied to host", b1, b2);
	fmt_bytes(b1, sizeof(b1), u->st.bytes_h2d);
	fmt_bytes(b2, sizeof(b2), c->st.bytes_h2d);
	printf("%-22s %16s %16s\n", "copied back", b1, b2);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "ops recomputed",
	       u->st.recomputes, c->st.recomputes);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "prefetch hits",
	       u->st.prefetch_hits, c->st.prefetch_hits);
	printf("%-22s %16.1f %16.1f\n", "driver calls per step",
	       u->driver_calls, c->driver_calls);
	printf("%-22s %13.3f ms %13.3f ms\n", "driver time per step",
	       u->driver_s * 1e3, c->driver_s * 1e3);
	printf("%-22s %13.3f ms %13.3f ms\n", "  on the driver thread",
	       u->bg_s * 1e3, c->bg_s * 1e3);
	if (gpu)
		printf("%-22s %15.1f%% %15.1f%%\n", "compute stream busy",
		       u->gpu_busy * 100, c->gpu_busy * 100);
	printf("%-22s %16.6f %16.6f\n", "loss, first step", u->loss_first,
	       c->loss_first);
	printf("%-22s %16.6f %16.6f\n", "loss, last step", u->loss_last,
	       c->loss_last);
	printf("%-22s %33s\n", "weights bit-identical", w);
}

static int write_trace(const char *path, const struct tp_trace *t)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -errno;
	rc = tp_trace_write(t, f);
	if (fclose(f) && !rc)
		rc = -EIO;
	return rc;
}

static int train(const struct train_args *a)
{
	struct run u, c;
	struct tp_trace *trace = NULL;
	uint64_t budget;
	char peak[32];
	int same = -1, rc;

	run_training(a, a->mo.batch, a->steps, 0, true,
		     a->trace_out ? &trace : NULL, &u);
	if (u.rc) {
		run_error(a, "unconstrained", a->mo.batch, &u);
		tp_trace_free(trace);
		free(u.params);
		return 1;
	}
	if (trace) {
		rc = write_trace(a->trace_out, trace);
		tp_trace_free(trace);
		if (rc) {
			fprintf(stderr, "%s: %s: %s\n", prog, a->trace_out,
				strerror(-rc));
			free(u.params);
			return 1;
		}
	}
	budget = budget_of(a, u.st.phys_peak);
	/* Bad arguments, found by the unconstrained run: exit 2. */
	if (budget < u.st.chunk_size) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below one chunk (%" PRIu64 " bytes)\n",
			prog, budget, u.st.chunk_size);
		free(u.params);
		return 2;
	}
	if (budget > u.st.phys_peak) {
		fmt_bytes(peak, sizeof(peak), u.st.phys_peak);
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is above the unconstrained peak of %s at batch %u (%s): nothing would be paged\n",
			prog, budget, a->model, a->mo.batch, peak);
		free(u.params);
		return 2;
	}
	run_training(a, a->mo.batch, a->steps, budget, true, NULL, &c);
	if (c.rc) {
		if (c.rc == -ENOMEM)
			fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below the working set of %s at batch %u (a step needs more than it)\n",
				prog, budget, a->model, a->mo.batch);
		else
			run_error(a, "budgeted", a->mo.batch, &c);
		free(u.params);
		free(c.params);
		return 1;
	}
	if (u.have_params && c.have_params)
		same = u.param_bytes == c.param_bytes &&
		       !memcmp(u.params, c.params, u.param_bytes);
	report(a, budget, &u, &c, same);
	free(u.params);
	free(c.params);
	if (!same) {
		fprintf(stderr, "%s: the final weights differ\n", prog);
		return 1;
	}
	return 0;
}

/*
 * With paging: two steps under @budget complete (the second sees the
 * first's leftovers). Without: the same allocator with nothing allowed to
 * leave, so a batch fits exactly when its unconstrained physical peak is
 * within the budget; that peak is measured directly instead of by a run
 * that fails.
 */
static int fits(const struct train_args *a, unsigned batch, uint64_t budget,
		bool paging, bool *ok)
{
	struct run r;

	run_training(a, batch, paging ? 2 : 1, paging ? budget : 0, false,
		     NULL, &r);
	*ok = !r.rc && (paging || r.st.phys_peak <= budget);
	/* -EOVERFLOW: a tensor past the ops' 32-bit element counts */
	if (r.rc == -ENOMEM || r.rc == TP_ENOREGEN || r.rc == TP_EDEPTH ||
	    r.rc == -EOVERFLOW || !r.rc)
		return 0;
	run_error(a, paging ? "budgeted" : "unconstrained", batch, &r);
	return r.rc;
}

/* fits(), told on stderr unless quiet. */
static int try_batch(const struct train_args *a, unsigned batch,
		     uint64_t budget, bool paging, bool *ok)
{
	int rc = fits(a, batch, budget, paging, ok);

	if (!rc && !a->quiet)
		fprintf(stderr, "%s: %s paging: batch %u %s\n", prog,
			paging ? "with" : "without", batch,
			*ok ? "fits" : "does not fit");
	return rc;
}

/* Doubling, then bisection: the largest batch that fits, 0 if none. */
static int search(const struct train_args *a, uint64_t budget, bool paging,
		  unsigned *best)
{
	unsigned lo = 0, hi = 1;
	bool ok;
	int rc;

	for (;;) {
		rc = try_batch(a, hi, budget, paging, &ok);
		if (rc)
			return rc;
		if (!ok)
			break;
		lo = hi;
		if (hi >= MAX_BATCH_LIMIT) {
			*best = hi;
			return 0;
		}
		hi *= 2;
	}
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		rc = try_batch(a, mid, budget, paging, &ok);
		if (rc)
			return rc;
		if (ok)
			lo = mid;
		else
			hi = mid;
	}
	*best = lo;
	return 0;
}

static int max_batch(const struct train_args *a)
{
	unsigned with = 0, without = 0;
	uint64_t budget = a->budget_bytes;
	unsigned probe = a->budget_percent ? a->mo.batch : 1;
	char b[32];
	struct run r;
	bool ok;

	/*
	 * One unconstrained step gives the chunk size (and the peak a
	 * percent is of); a budget that cannot take a chunk, or batch 1 even
	 * with paging, is a bad argument, told in one line before searching.
	 */
	run_training(a, probe, 1, 0, false, NULL, &r);
	if (r.rc) {
		run_error(a, "unconstrained", probe, &r);
		return 1;
	}
	if (a->budget_percent)
		budget = budget_of(a, r.st.phys_peak);
	if (budget < r.st.chunk_size) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below one chunk (%" PRIu64 " bytes)\n",
			prog, budget, r.st.chunk_size);
		return 2;
	}
	if (fits(a, 1, budget, true, &ok))
		return 1;
	if (!ok) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below the working set of %s at batch 1 (a step needs more than it)\n",
			prog, budget, a->model);
		return 1;
	}
	if (search(a, budget, false, &without) ||
	    search(a, budget, true, &with))
		return 1;
	if (a->json) {
		printf("{\"model\":\"%s\",\"depth\":%u,\"backend\":\"%s\","
		       "\"budget_bytes\":%" PRIu64 ",\"max_batch_without\":%u,"
		       "\"max_batch_with\":%u}\n", a->model, a->mo.depth,
		       a->backend, budget, without, with);
		return 0;
	}
	fmt_bytes(b, sizeof(b), budget);
	printf("tpager-train: largest batch of %s%s%.0u under %s (%s backend)\n\n",
	       a->model, a->mo.depth ? "-" : "", a->mo.depth, b, a->backend);
	printf("%-34s %8u\n", "without paging (peak <= budget)", without);
	printf("%-34s %8u\n", "with tpager", with);
	if (without)
		printf("%-34s %7.2fx\n", "ratio", (double)with / without);
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_MODEL = 256, O_DEPTH, O_LAYERS, O_HIDDEN, O_HEADS, O_SEQ,
		O_IMAGE, O_CLASSES, O_BATCH, O_STEPS, O_BUDGET, O_POLICY, O_BACKEND,
		O_SEED, O_TRACE, O_JSON, O_MAXB, O_CHUNK, O_SET, O_OPTIM, O_LR,
		O_QUIET, O_HELP,
	};
	static const struct option lopts[] = {
		{ "model", required_argument, NULL, O_MODEL },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "layers", required_argument, NULL, O_LAYERS },
		{ "hidden", required_argument, NULL, O_HIDDEN },
		{ "heads", required_argument, NULL, O_HEADS },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "classes", required_argument, NULL, O_CLASSES },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "budget", required_argument, NULL, O_BUDGET },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "seed", required_argument, NULL, O_SEED },
		{ "optim", required_argument, NULL, O_OPTIM },
		{ "lr", required_argument, NULL, O_LR },
		{ "chunk-size", required_argument, NULL, O_CHUNK },
		{ "set", required_argument, NULL, O_SET },
		{ "trace-out", required_argument, NULL, O_TRACE },
		{ "json", no_argument, NULL, O_JSON },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "max-batch", no_argument, NULL, O_MAXB },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct train_args a = { .steps = 20 };
	unsigned long long v;
	uint64_t bytes;
	int c;

	snprintf(a.backend, sizeof(a.backend), "auto");
	tp_conf_defaults(&a.conf);
	/* The library's messages about the arguments go into die()'s. */
	tp_set_log(keep_log, NULL);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_MODEL: parse_model(&a, optarg); break;
		case O_DEPTH:
			a.mo.depth = opt_uint("depth", optarg, 18, 101);
			if (a.mo.depth != 18 && a.mo.depth != 34 &&
			    a.mo.depth != 50 && a.mo.depth != 101)
				die("--depth: %u is not 18, 34, 50 or 101",
				    a.mo.depth);
			break;
		case O_LAYERS: a.mo.layers = opt_uint("layers", optarg, 1, 1024); break;
		case O_HIDDEN: a.mo.hidden = opt_uint("hidden", optarg, 1, 65536); break;
		case O_HEADS: a.mo.heads = opt_uint("heads", optarg, 1, 1024); break;
		case O_SEQ: a.mo.seq = opt_uint("seq", optarg, 1, 65536); break;
		case O_IMAGE: a.mo.image = opt_uint("image", optarg, 1, 4096); break;
		case O_CLASSES:
			a.mo.classes = opt_uint("classes", optarg, 2, 1u << 20);
			break;
		case O_BATCH:
			a.mo.batch = opt_uint("batch", optarg, 1, MAX_BATCH_LIMIT);
			a.have_batch = true;
			break;
		case O_STEPS:
			a.steps = opt_uint("steps", optarg, 1, 1000000);
			a.have_steps = true;
			break;
		case O_BUDGET: parse_budget(&a, optarg); break;
		case O_POLICY: parse_policy(&a, optarg); break;
		case O_BACKEND:
			if (strcmp(optarg, "auto") && strcmp(optarg, "host") &&
			    strcmp(optarg, "cuda") && strcmp(optarg, "sim"))
				die("--backend: unknown backend '%s' (auto, host, cuda, sim)",
				    optarg);
			snprintf(a.backend, sizeof(a.backend), "%s", optarg);
			break;
		case O_SEED:
			if (!parse_uint(optarg, UINT64_MAX, &v))
				die("--seed: '%s' is not a number", optarg);
			a.mo.seed = v;
			break;
		case O_OPTIM:
			if (strcmp(optarg, "sgd") && strcmp(optarg, "adam"))
				die("--optim: unknown optimizer '%s' (sgd, adam)",
				    optarg);
			a.mo.optim = optarg;
			break;
		case O_LR: {
			double lr;

			if (!parse_double(optarg, &lr) || !(lr > 0) || lr > 10)
				die("--lr: '%s' is not a learning rate in (0, 10]",
				    optarg);
			a.mo.lr = (float)lr;
			break;
		}
		case O_CHUNK:
			/* vmm.chunk_size: a power of two (tpager.conf(5)) */
			if (!parse_bytes(optarg, &bytes) || bytes < 4096 ||
			    (bytes & (bytes - 1)))
				die("--chunk-size: '%s' is not a power of two of at least 4K",
				    optarg);
			snprintf(a.chunk, sizeof(a.chunk), "%" PRIu64, bytes);
			break;
		case O_SET: add_extra(&a, optarg); break;
		case O_TRACE: a.trace_out = optarg; break;
		case O_JSON: a.json = true; a.quiet = true; break;
		case O_QUIET: a.quiet = true; break;
		case O_MAXB: a.max_batch = true; break;
		case 'h': case O_HELP: usage(stdout); return 0;
		default:
			if (optopt)
				die("option '%s' needs a value (try --help)",
				    argv[optind - 1]);
			die("unknown option '%s' (try --help)",
			    argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (try --help)", argv[optind]);
	if (a.mo.depth && a.have_model && strcmp(a.model, "resnet"))
		die("--depth applies to resnet only");
	last_msg[0] = 0;
	if (tp_conf_check(&a.conf, "--set"))
		die("%s", last_msg);
	resolve_backend(&a);
	defaults(&a);
	if (a.mo.hidden && a.mo.heads && a.mo.hidden % a.mo.heads)
		die("--heads %u does not divide --hidden %u", a.mo.heads,
		    a.mo.hidden);
	/* VGG's five pools and ResNet's /32 need 32 pixels (kernels/models.c) */
	if (a.mo.image && a.mo.image < 32 && (!strcmp(a.model, "resnet") ||
					      !strcmp(a.model, "vgg16")))
		die("--image: %s needs images of at least 32 pixels",
		    a.model);
	if (a.max_batch && a.trace_out)
		die("--trace-out and --max-batch do not go together");
	return a.max_batch ? max_batch(&a) : train(&a);
}
