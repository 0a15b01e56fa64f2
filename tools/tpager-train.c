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

#include "base/log.h"
#include "ctx/ctx.h"
#include "kernels/models.h"
#include "tools/train.h"
#include "tpager.h"
#include "trace/trace.h"
#include "vmm/vmm.h"
#include "ctl/conf.h"
#include "tools/cli.h"
#include "tools/train_run.h"

const char *prog = "tpager-train";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--model mlp|resnet-mini|resnet[-50]|vgg16|bert[-base]] [--depth N]\n"
		"       [--layers N] [--hidden N] [--heads N] [--seq N] [--image N]\n"
		"       [--classes N] [--batch N] [--steps N] [--budget B|P%%] [--policy FILTER[/DIRECTOR]]\n"
		"       [--backend auto|host|cuda|sim] [--seed N] [--optim sgd|adam]\n"
		"       [--lr X] [--chunk-size B] [--set KEY=VALUE]... [--trace-out FILE]\n"
		"       [--json] [--quiet] [--verbose] [--max-batch] [--max-batch-steps N]\n"
		"       [--max-batch-confirm N] [--max-batch-time SECONDS]\n"
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
char last_msg[256];
/* The first error the library logged in a run: the driver's word. */
char first_error[256];
/* --verbose: every library message to stderr as it comes. */
static bool verbose;

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
	if (level == TP_LOG_ERROR && !first_error[0])
		snprintf(first_error, sizeof(first_error), "%s", msg);
	if (verbose)
		fprintf(stderr, "tpager: %s: %s\n", tp_log_level_name(level),
			msg);
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
 * left open: policy.split, which it turns on, pager.host_budget,
 * which on host and cuda it bounds by the memory the machine has, and
 * vmm.workspace_max, which --max-batch bounds by the budget. A bad
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
		a->workspace_max = c->vmm_workspace_max;
	}
	tp_set_log(keep_log, NULL);
	free(c);
	if (strcmp(a->backend, "sim"))
		a->mem_available = mem_available();
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

int main(int argc, char **argv)
{
	enum {
		O_MODEL = 256, O_DEPTH, O_LAYERS, O_HIDDEN, O_HEADS, O_SEQ,
		O_IMAGE, O_CLASSES, O_BATCH, O_STEPS, O_BUDGET, O_POLICY, O_BACKEND,
		O_SEED, O_TRACE, O_JSON, O_MAXB, O_CHUNK, O_SET, O_OPTIM, O_LR,
		O_QUIET, O_HELP, O_MAXB_STEPS, O_MAXB_TIME, O_VERBOSE,
		O_MAXB_CONFIRM,
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
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "max-batch", no_argument, NULL, O_MAXB },
		{ "max-batch-steps", required_argument, NULL, O_MAXB_STEPS },
		{ "max-batch-time", required_argument, NULL, O_MAXB_TIME },
		{ "max-batch-confirm", required_argument, NULL,
		  O_MAXB_CONFIRM },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct train_args a = {
		.steps = 20, .try_steps = TRY_STEPS, .time_limit = SEARCH_TIME,
		.confirm_steps = CONFIRM_STEPS,
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
		case O_VERBOSE: verbose = true; break;
		case O_MAXB: a.max_batch = true; break;
		case O_MAXB_STEPS:
			a.try_steps = opt_uint("max-batch-steps", optarg, 2,
					       1000);
			search_opts = true;
			break;
		case O_MAXB_CONFIRM:
			a.confirm_steps = opt_uint("max-batch-confirm", optarg,
						   0, 1000);
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
		die("--max-batch-steps, --max-batch-confirm and --max-batch-time apply to --max-batch only");
	resolve_conf(&a);
	return a.max_batch ? max_batch(&a) : train(&a);
}
