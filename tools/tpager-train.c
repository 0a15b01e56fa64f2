// SPDX-License-Identifier: MIT
/*
 * tpager-train: train a model from kernels/ twice with the same seed,
 * without a budget and under one, and show what the pager bought (memory)
 * and cost (time), and that the final weights are the same bits. With
 * --max-batch, search the largest batch that trains under the budget with
 * and without paging, trying each batch, within a time limit. With
 * --trace-out, write the unconstrained run as a tpager-trace(5) file
 * (tools/train_record.c).
 */
#include "config.h"

#include <ctype.h>
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
/* --max-batch: steps of each try, and the whole search's limit (s) */
#define TRY_STEPS	3
#define SEARCH_TIME	1800

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
	unsigned try_steps;		/* --max-batch-steps */
	double time_limit;		/* --max-batch-time, s; 0: none */
	char extra[512];		/* --set KEY=VALUE, comma-joined */
	struct tp_conf conf;		/* the defaults and --set, to check
					 * them before any run */
	/* from the configuration the runs will see (resolve_conf()) */
	bool split_unset;		/* policy.split left at auto */
	uint64_t host_budget;		/* pager.host_budget; 0: none */
	uint64_t mem_available;		/* host and cuda: MemAvailable */
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
	uint64_t host_limit;		/* host swap it was allowed; 0: none */
	char why[256];			/* the library's word on a failure */
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
		"       [--json] [--quiet] [--max-batch] [--max-batch-steps N]\n"
		"       [--max-batch-time SECONDS]\n"
		"FILTER: delta|lru|greedy|dtr|msps|coop|overlap\n"
		"DIRECTOR: delta|delta-overlap|evict|offload\n", prog);
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
	char num[64];

	a->have_budget = true;
	if (len > 1 && s[len - 1] == '%') {
		snprintf(num, sizeof(num), "%.*s", (int)(len - 1), s);
		if (len - 1 >= sizeof(num) ||
		    tp_parse_double(num, &a->budget_pct) ||
		    !(a->budget_pct > 0) || a->budget_pct > 100 ||
		    *s < '0' || *s > '9' || isspace((unsigned char)s[len - 2]))
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

/* MemAvailable of /proc/meminfo in bytes; 0 when it cannot be read. */
static uint64_t mem_available(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/*
 * What the runs will read from the configuration (tpager.conf(5): the
 * files, $TPAGER_OPTS, then --set) that the tool fills in where it is
 * left open: policy.split, which it turns on, and pager.host_budget,
 * which on host and cuda it bounds by the memory the machine has. A bad
 * configuration is left for the first run to report.
 */
static void resolve_conf(struct train_args *a)
{
	const struct tp_conf_key *k = tp_conf_find("policy.split");
	struct tp_conf *c = malloc(sizeof(*c));
	char v[16];

	a->split_unset = true;
	if (!c)
		return;
	tp_set_log(quiet_log, NULL);
	if (!tp_conf_load(c, a->extra)) {
		a->split_unset = k && !tp_conf_format(c, k, v, sizeof(v)) &&
				 !strcmp(v, "auto");
		a->host_budget = c->pager_host_budget;
	}
	tp_set_log(keep_log, NULL);
	free(c);
	if (strcmp(a->backend, "sim"))
		a->mem_available = mem_available();
}

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
 * Train @steps steps of @batch under @budget bytes (0: no budget), the
 * program's ops refused from monotonic time @deadline on (0: none). With
 * @record, the steps are recorded into *@trace. A failed run keeps the
 * statistics and the library's message of the failure.
 */
static void run_training(const struct train_args *a, unsigned batch,
			 unsigned steps, uint64_t budget, double deadline,
			 bool want_params, struct tp_trace **trace,
			 struct run *r)
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
	tp_rec_deadline(0);
	if (r->rc) {
		/* The context's last error is the verdict (an op that could
		 * not take an input whole may still have been split). */
		tp_stats_get(ctx, &r->st);
		snprintf(r->why, sizeof(r->why), "%s",
			 r->rc == -ETIMEDOUT ? "stopped at the time limit" :
			 tp_last_error(ctx)[0] ? tp_last_error(ctx) :
			 last_msg);
	}
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
		tp_strerror(r->rc), r->why[0] ? ": " : "", r->why);
}

/* Whether @r failed for want of host swap (stats.swap_full). */
static bool swap_failed(const struct run *r)
{
	return r->rc == -ENOMEM && r->st.swap_full;
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
static void swap_error(const struct train_args *a, unsigned batch,
		       const struct run *r)
{
	char lim[96], used[32];

	fmt_host_limit(a, r, lim, sizeof(lim));
	fmt_bytes(used, sizeof(used), r->st.host_peak);
	fprintf(stderr, "%s: host swap is full: %s cannot hold what %s at batch %u must offload (it reached %s)%s%s\n",
		prog, lim, a->model, batch, used, r->why[0] ? ": " : "",
		r->why);
}

static uint64_t budget_of(const struct train_args *a, uint64_t peak)
{
	if (!a->budget_percent)
		return a->budget_bytes;
	return (uint64_t)((double)peak * a->budget_pct / 100.0);
}

/* Samples a second at the time per step, 0 where there is none. */
static double images_per_s(unsigned batch, const struct run *r)
{
	return r->step_s > 0 ? batch / r->step_s : 0;
}

/* @s as a JSON string, or null. */
static void json_str(const char *s)
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

static void print_json_run(const char *name, unsigned batch,
			   const struct run *r, bool gpu_timed, bool last)
{
	printf("\"%s\":{\"phys_peak\":%" PRIu64 ",\"step_s\":%.6f,"
	       "\"images_per_s\":%.3f,\"loss_first\":", name,
	       r->st.phys_peak, r->step_s, images_per_s(batch, r));
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
	       ",\"split_runs\":%" PRIu64 ",\"split_parts\":%" PRIu64
	       ",\"host_peak\":%" PRIu64 ",\"host_limit\":%" PRIu64
	       ",\"driver_calls_per_step\":%.1f,\"driver_s_per_step\":%.6f"
	       ",\"driver_bg_calls_per_step\":%.1f"
	       ",\"driver_bg_s_per_step\":%.6f,\"gpu_busy\":",
	       r->st.evictions, r->st.offloads, r->st.reloads,
	       r->st.bytes_d2h, r->st.bytes_h2d, r->st.recomputes, r->st.prefetch_hits, r->st.stall_ns,
	       r->st.recompute_ns, r->st.compute_ns, r->st.driver_calls,
	       r->st.driver_ns, r->st.range_cache_misses, r->st.policy_ns,
	       r->st.handles, r->st.recarves, r->st.rescued_pages,
	       r->st.split_runs, r->st.split_parts, r->st.host_peak,
	       r->host_limit, r->driver_calls, r->driver_s, r->bg_calls,
	       r->bg_s);
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
	fmt_bytes(b1, sizeof(b1), u->st.phys_peak);
	fmt_bytes(b2, sizeof(b2), c->st.phys_peak);
	printf("%-22s %16s %16s\n", "physical peak", b1, b2);
	fmt_bytes(b3, sizeof(b3), u->st.phys_peak > c->st.phys_peak ?
		  u->st.phys_peak - c->st.phys_peak : 0);
	printf("%-22s %16s %16s (%.1f%%)\n", "memory saved", "", b3, saved);
	printf("%-22s %13.3f ms %13.3f ms\n", "time per step",
	       u->step_s * 1e3, c->step_s * 1e3);
	printf("%-22s %16.1f %16.1f\n", "samples per second",
	       images_per_s(a->mo.batch, u), images_per_s(a->mo.batch, c));
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
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "pages rescued",
	       u->st.rescued_pages, c->st.rescued_pages);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "prefetch hits",
	       u->st.prefetch_hits, c->st.prefetch_hits);
	printf("%-22s %16" PRIu64 " %16" PRIu64 "\n", "split runs",
	       u->st.split_runs, c->st.split_runs);
	fmt_bytes(b1, sizeof(b1), u->st.host_peak);
	fmt_bytes(b2, sizeof(b2), c->st.host_peak);
	printf("%-22s %16s %16s\n", "host swap peak", b1, b2);
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

	run_training(a, a->mo.batch, a->steps, 0, 0, true,
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
	run_training(a, a->mo.batch, a->steps, budget, 0, true, NULL, &c);
	if (c.rc) {
		if (swap_failed(&c))
			swap_error(a, a->mo.batch, &c);
		else if (c.rc == -ENOMEM)
			fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below the working set of %s at batch %u (a step needs more than it)%s%s\n",
				prog, budget, a->model, a->mo.batch,
				c.why[0] ? ": " : "", c.why);
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

/* --- --max-batch ---------------------------------------------------------- */

enum try_result { TRY_FITS, TRY_NO_FIT, TRY_STOPPED, TRY_ERROR };

static const char *const try_words[] = {
	[TRY_FITS] = "fits", [TRY_NO_FIT] = "does not fit",
	[TRY_STOPPED] = "stopped at the time limit",
};

struct search {
	const struct train_args *a;
	uint64_t budget;
	double start, deadline;		/* monotonic s; deadline 0: none */
	unsigned tries;
	bool stopped;			/* the time limit ended it */
	/* with paging: the largest batch that fit, and its try */
	unsigned best;
	struct run best_run;
	/* with paging: the smallest batch that did not, and why */
	unsigned no_fit;
	struct run no_fit_run;
};

/* One try as it completes: a line on stderr, or a JSON line. */
static void print_try(const struct search *s, unsigned batch, bool paging,
		      const struct run *r, enum try_result res, double secs)
{
	const struct train_args *a = s->a;
	char peak[32], host[32];

	if (a->json) {
		printf("{\"try\":%u,\"paging\":%s,\"batch\":%u,\"result\":\"%s\","
		       "\"steps\":%u,\"step_s\":", s->tries,
		       paging ? "true" : "false", batch, try_words[res],
		       paging ? a->try_steps : 1);
		if (paging && res == TRY_FITS)
			printf("%.6f,\"images_per_s\":%.3f", r->step_s,
			       images_per_s(batch, r));
		else
			printf("null,\"images_per_s\":null");
		printf(",\"phys_peak\":%" PRIu64 ",\"host_peak\":%" PRIu64
		       ",\"evictions\":%" PRIu64 ",\"offloads\":%" PRIu64
		       ",\"recomputes\":%" PRIu64 ",\"split_runs\":%" PRIu64
		       ",\"split_parts\":%" PRIu64 ",\"swap_full\":%" PRIu64
		       ",\"elapsed_s\":%.3f,\"why\":", r->st.phys_peak,
		       r->st.host_peak, r->st.evictions, r->st.offloads,
		       r->st.recomputes, r->st.split_runs, r->st.split_parts,
		       r->st.swap_full, secs);
		json_str(res == TRY_FITS || !paging ? NULL : r->why);
		printf("}\n");
		fflush(stdout);
		return;
	}
	if (a->quiet)
		return;
	fmt_bytes(peak, sizeof(peak), r->st.phys_peak);
	fmt_bytes(host, sizeof(host), r->st.host_peak);
	if (!paging) {
		fprintf(stderr, "%s: without paging: batch %u %s (peak %s) [%.1f s]\n",
			prog, batch, try_words[res], peak, secs);
		return;
	}
	if (res == TRY_FITS)
		fprintf(stderr, "%s: with paging: batch %u fits: %.3f ms a step, %.1f samples/s, peak %s, host swap %s, %" PRIu64 " split runs (%" PRIu64 " parts) [%.1f s]\n",
			prog, batch, r->step_s * 1e3, images_per_s(batch, r),
			peak, host, r->st.split_runs, r->st.split_parts, secs);
	else
		fprintf(stderr, "%s: with paging: batch %u %s%s%s (%" PRIu64 " split runs, host swap %s) [%.1f s]\n",
			prog, batch, try_words[res],
			r->why[0] && res != TRY_STOPPED ? ": " : "",
			res != TRY_STOPPED ? r->why : "", r->st.split_runs,
			host, secs);
}

/*
 * Try @batch: with paging, --max-batch-steps steps under the budget must
 * complete; without, one unconstrained step must peak within it (the same
 * allocator with nothing allowed to leave fits exactly then, and the peak
 * is measured rather than found by a run that fails). What a try says,
 * it says as it completes.
 */
static enum try_result try_batch(struct search *s, unsigned batch,
				 bool paging, struct run *r)
{
	const struct train_args *a = s->a;
	enum try_result res;
	double t0 = now_s();

	if (s->deadline && t0 >= s->deadline) {
		s->stopped = true;
		return TRY_STOPPED;
	}
	run_training(a, batch, paging ? a->try_steps : 1,
		     paging ? s->budget : 0, s->deadline, false, NULL, r);
	s->tries++;
	if (!r->rc)
		res = paging || r->st.phys_peak <= s->budget ? TRY_FITS :
							       TRY_NO_FIT;
	else if (r->rc == -ETIMEDOUT)
		res = TRY_STOPPED;
	/* -EOVERFLOW: a tensor past the ops' 32-bit element counts */
	else if (r->rc == -ENOMEM || r->rc == -TP_ENOREGEN ||
		 r->rc == -TP_EDEPTH || r->rc == -TP_EWORK ||
		 r->rc == -EOVERFLOW)
		res = TRY_NO_FIT;
	else
		res = TRY_ERROR;
	if (res == TRY_ERROR) {
		run_error(a, paging ? "budgeted" : "unconstrained", batch, r);
		return res;
	}
	if (res == TRY_STOPPED)
		s->stopped = true;
	if (res == TRY_NO_FIT && swap_failed(r))
		snprintf(r->why, sizeof(r->why), "host swap is full (limit %" PRIu64 " bytes, reached %" PRIu64 ")",
			 r->host_limit, r->st.host_peak);
	print_try(s, batch, paging, r, res, now_s() - t0);
	if (paging && res == TRY_FITS && batch > s->best) {
		s->best = batch;
		s->best_run = *r;
	}
	if (paging && res == TRY_NO_FIT && (!s->no_fit || batch < s->no_fit)) {
		s->no_fit = batch;
		s->no_fit_run = *r;
	}
	return res;
}

/*
 * Doubling from @start, then bisection, above @lo known to fit: the
 * largest batch that fits, or, stopped by the time limit, the largest
 * found so far. -1 when a try failed for another reason than memory.
 */
static int search(struct search *s, bool paging, unsigned lo,
		  unsigned start, unsigned *best)
{
	unsigned hi = start > lo ? start : lo + 1;
	enum try_result res;
	struct run r;

	*best = lo;
	for (;;) {
		res = try_batch(s, hi, paging, &r);
		if (res == TRY_ERROR)
			return -1;
		if (res == TRY_STOPPED)
			return 0;
		if (res != TRY_FITS)
			break;
		lo = *best = hi;
		if (hi >= MAX_BATCH_LIMIT)
			return 0;
		hi = hi > MAX_BATCH_LIMIT / 2 ? MAX_BATCH_LIMIT : 2 * hi;
	}
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		res = try_batch(s, mid, paging, &r);
		if (res == TRY_ERROR)
			return -1;
		if (res == TRY_STOPPED)
			return 0;
		if (res == TRY_FITS)
			lo = *best = mid;
		else
			hi = mid;
	}
	return 0;
}

static void report_max_batch(const struct search *s, unsigned without,
			     unsigned with)
{
	const struct train_args *a = s->a;
	const struct run *b = &s->best_run, *n = &s->no_fit_run;
	double secs = now_s() - s->start;
	char buf[32];

	if (a->json) {
		printf("{\"model\":\"%s\",\"depth\":%u,\"backend\":\"%s\","
		       "\"budget_bytes\":%" PRIu64 ",\"max_batch_without\":%u,"
		       "\"max_batch_with\":%u,\"steps_per_try\":%u,"
		       "\"time_limit_s\":%g,\"complete\":%s,\"tries\":%u,"
		       "\"elapsed_s\":%.3f,\"at_max\":", a->model, a->mo.depth,
		       a->backend, s->budget, without, with, a->try_steps,
		       a->time_limit, s->stopped ? "false" : "true", s->tries,
		       secs);
		if (with)
			printf("{\"batch\":%u,\"step_s\":%.6f,"
			       "\"images_per_s\":%.3f,\"phys_peak\":%" PRIu64
			       ",\"host_peak\":%" PRIu64 ",\"host_limit\":%"
			       PRIu64 ",\"split_runs\":%" PRIu64
			       ",\"split_parts\":%" PRIu64 ",\"evictions\":%"
			       PRIu64 ",\"offloads\":%" PRIu64
			       ",\"recomputes\":%" PRIu64 "}", with,
			       b->step_s, images_per_s(with, b),
			       b->st.phys_peak, b->st.host_peak, b->host_limit,
			       b->st.split_runs, b->st.split_parts,
			       b->st.evictions, b->st.offloads,
			       b->st.recomputes);
		else
			printf("null");
		printf(",\"first_no_fit\":");
		if (s->no_fit) {
			printf("{\"batch\":%u,\"swap_full\":%s,\"why\":",
			       s->no_fit, swap_failed(n) ? "true" : "false");
			json_str(n->why);
			printf("}");
		} else {
			printf("null");
		}
		printf("}\n");
		return;
	}
	fmt_bytes(buf, sizeof(buf), s->budget);
	printf("tpager-train: largest batch of %s%s%.0u under %s (%s backend)\n\n",
	       a->model, a->mo.depth ? "-" : "", a->mo.depth, buf, a->backend);
	printf("%-34s %8u\n", "without paging (peak <= budget)", without);
	printf("%-34s %8u\n", "with tpager", with);
	if (without)
		printf("%-34s %7.2fx\n", "ratio", (double)with / without);
	if (with) {
		printf("%-34s %8.3f ms\n", "time per step there",
		       b->step_s * 1e3);
		printf("%-34s %8.1f\n", "samples per second there",
		       images_per_s(with, b));
		fmt_bytes(buf, sizeof(buf), b->st.host_peak);
		printf("%-34s %11s\n", "host swap it needs", buf);
		printf("%-34s %8" PRIu64 " (%" PRIu64 " parts)\n",
		       "split runs there", b->st.split_runs,
		       b->st.split_parts);
	}
	if (s->no_fit)
		printf("batch %u does not fit: %s\n", s->no_fit,
		       n->why[0] ? n->why : tp_strerror(n->rc));
	printf("%u tries of %u steps in %.1f s\n", s->tries, a->try_steps,
	       secs);
	if (s->stopped)
		printf("stopped at the time limit (--max-batch-time %g s): the largest batch is at least %u\n",
		       a->time_limit, with);
}

static int max_batch(const struct train_args *a)
{
	struct search s = { .a = a, .start = now_s() };
	unsigned with = 0, without = 0;
	unsigned probe = a->budget_percent ? a->mo.batch : 1;
	unsigned start = a->have_batch ? a->mo.batch : 1;
	struct run r;
	double t0;

	s.deadline = a->time_limit > 0 ? s.start + a->time_limit : 0;
	s.budget = a->budget_bytes;
	/*
	 * One unconstrained step gives the chunk size (and the peak a
	 * percent is of); a budget that cannot take a chunk, or batch 1 even
	 * with paging, is a bad argument, told in one line before searching.
	 */
	run_training(a, probe, 1, 0, s.deadline, false, NULL, &r);
	if (r.rc) {
		run_error(a, "unconstrained", probe, &r);
		return 1;
	}
	if (a->budget_percent)
		s.budget = budget_of(a, r.st.phys_peak);
	if (s.budget < r.st.chunk_size) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below one chunk (%" PRIu64 " bytes)\n",
			prog, s.budget, r.st.chunk_size);
		return 2;
	}
	/* Batch 1 with paging: told only when it fits, else the error. */
	t0 = now_s();
	run_training(a, 1, a->try_steps, s.budget, s.deadline, false, NULL,
		     &r);
	if (r.rc == -ENOMEM && swap_failed(&r)) {
		swap_error(a, 1, &r);
		return 1;
	}
	if (r.rc == -ETIMEDOUT) {
		fprintf(stderr, "%s: batch 1 did not finish within --max-batch-time %g s\n",
			prog, a->time_limit);
		return 1;
	}
	if (r.rc == -ENOMEM) {
		fprintf(stderr, "%s: budget of %" PRIu64 " bytes is below the working set of %s at batch 1 (a step needs more than it)%s%s\n",
			prog, s.budget, a->model, r.why[0] ? ": " : "",
			r.why);
		return 1;
	}
	if (r.rc) {
		run_error(a, "budgeted", 1, &r);
		return 1;
	}
	s.tries++;
	print_try(&s, 1, true, &r, TRY_FITS, now_s() - t0);
	s.best = with = 1;
	s.best_run = r;
	if (search(&s, false, 0, start, &without))
		return 1;
	/* Stopped without paging, the search with it is not begun. */
	if (!s.stopped && search(&s, true, 1, start, &with))
		return 1;
	report_max_batch(&s, without, with);
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_MODEL = 256, O_DEPTH, O_LAYERS, O_HIDDEN, O_HEADS, O_SEQ,
		O_IMAGE, O_CLASSES, O_BATCH, O_STEPS, O_BUDGET, O_POLICY, O_BACKEND,
		O_SEED, O_TRACE, O_JSON, O_MAXB, O_CHUNK, O_SET, O_OPTIM, O_LR,
		O_QUIET, O_HELP, O_MAXB_STEPS, O_MAXB_TIME,
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
		{ "max-batch-steps", required_argument, NULL, O_MAXB_STEPS },
		{ "max-batch-time", required_argument, NULL, O_MAXB_TIME },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct train_args a = {
		.steps = 20, .try_steps = TRY_STEPS, .time_limit = SEARCH_TIME,
	};
	bool search_opts = false;
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

			if (tp_parse_double(optarg, &lr) || !(lr > 0) || lr > 10)
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
		case O_MAXB_STEPS:
			a.try_steps = opt_uint("max-batch-steps", optarg, 2,
					       1000);
			search_opts = true;
			break;
		case O_MAXB_TIME: {
			double t;

			if (tp_parse_double(optarg, &t) || t < 0)
				die("--max-batch-time: '%s' is not a number of seconds (0: no limit)",
				    optarg);
			a.time_limit = t;
			search_opts = true;
			break;
		}
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
	if (search_opts && !a.max_batch)
		die("--max-batch-steps and --max-batch-time apply to --max-batch only");
	resolve_conf(&a);
	return a.max_batch ? max_batch(&a) : train(&a);
}
