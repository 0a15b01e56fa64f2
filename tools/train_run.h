/* SPDX-License-Identifier: MIT */
/*
 * What tpager-train's files share: the arguments, one run of training and
 * what it gave, and the helpers that report it (tools/tpager-train.c);
 * the --max-batch search is tools/train_search.c.
 */
#ifndef TP_TOOLS_TRAIN_RUN_H
#define TP_TOOLS_TRAIN_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/conf.h"
#include "kernels/models.h"
#include "tpager.h"
#include "trace/trace.h"

#define MAX_BATCH_LIMIT	(1u << 20)
/* --max-batch: steps of each try, and the whole search's limit (s) */
#define TRY_STEPS	3
/* steps the largest batch found trains again before it is the answer */
#define CONFIRM_STEPS	10
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
	unsigned confirm_steps;		/* --max-batch-confirm; 0: none */
	double time_limit;		/* --max-batch-time, s; 0: none */
	char extra[512];		/* --set KEY=VALUE, comma-joined */
	struct tp_conf conf;		/* the defaults and --set, to check
					 * them before any run */
	/* from the configuration the runs will see (resolve_conf()) */
	bool split_unset;		/* policy.split left at auto */
	struct tp_psize workspace_max;	/* vmm.workspace_max */
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
	double step_median_s;		/* their median: the steady step,
					 * without one-time costs (host
					 * swap pinned as it grows) */
	/* per step after the first: driver calls and their time on the
	 * thread that issues the ops and on the library's driver thread,
	 * and the fraction of the step the compute stream was busy */
	double driver_calls, driver_s, bg_calls, bg_s, gpu_busy;
	float loss_first, loss_last;
	void *params;
	size_t param_bytes;
	bool have_params;
	uint64_t host_limit;		/* host swap it was allowed; 0: none */
	char why[512];			/* the library's word on a failure */
};

extern const char *prog;
/* The first warning or error the library logged since it was cleared. */
extern char last_msg[256];
/* The first error the library logged since it was cleared. */
extern char first_error[256];

/* Monotonic seconds. */
double now_s(void);
/* @b as "1.50 GiB" and the like. */
void fmt_bytes(char *buf, size_t len, uint64_t b);
/*
 * Train @steps steps of @batch under @budget bytes (0: no budget), until
 * @deadline (now_s(); 0: none), into *@r: the final weights with
 * @want_params, the steps recorded into *@trace where it is not NULL.
 */
void run_training(const struct train_args *a, unsigned batch,
		  unsigned steps, uint64_t budget, double deadline,
		  bool want_params, struct tp_trace **trace, struct run *r);
/* The one line of a run that failed other than for room. */
void run_error(const struct train_args *a, const char *which,
	       unsigned batch, const struct run *r);
/* Whether @r failed for want of host swap. */
bool swap_failed(const struct run *r);
/* The one line of a run that host swap could not hold. */
void swap_error(const struct train_args *a, unsigned batch,
		const struct run *r);
/* The budget in bytes for an unconstrained peak of @peak. */
uint64_t budget_of(const struct train_args *a, uint64_t peak);
/* Samples a second at the time per step, 0 where there is none. */
double images_per_s(unsigned batch, const struct run *r);
/* @s as a JSON string, or null. */
void json_str(const char *s);

/*
 * The report of an unconstrained run @u and one under @budget, @c, whose
 * final weights were the same bits (@same 1), not (0) or not compared
 * (-1): a table, or a JSON object with --json.
 */
void report(const struct train_args *a, uint64_t budget,
	    const struct run *u, const struct run *c, int same);

/* --max-batch (tools/train_search.c): search, report; the exit status. */
int max_batch(const struct train_args *a);

#endif /* TP_TOOLS_TRAIN_RUN_H */
