/* SPDX-License-Identifier: MIT */
/*
 * Decision latency of the policy: one decision is choose() plus the del()
 * of the victim and the add() of the tensor that needed the room, with N
 * candidates kept constant. Median and p99 per filter and search, at 1k,
 * 10k and 100k candidates.
 *
 * usage: policy-bench [decisions per row (default 20000)] [seed] [filter]
 *        [search] [N]   (the last three pick one row)
 *
 * policy-bench sim [cnn|transformer]: the policies on the sim backend
 * instead: a CNN-like and a transformer-like training iteration from
 * trace/trace_gen.c (H100 costs), under 100/75/50/35% of the
 * unconstrained physical peak, driver costs per 2 MiB granule; per
 * policy and budget: whether it fits, extra time over the unconstrained
 * replay, evictions, offloads, recomputes, prefetch hits/issued/late.
 * A replay stops as thrashing past 20x the compute in recomputation.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx/ctx.h"
#include "policy/policy.h"
#include "trace/replay.h"
#include "trace/trace_gen.h"

static uint64_t now, rng;
static double *cost;
static struct tp_tensor *pool;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t clock_fn(void *priv)
{
	return now;
}

static double cost_fn(void *priv, const struct tp_tensor *t,
		      size_t *anc_pages)
{
	*anc_pages = 0;
	return cost[t - pool];
}

static bool computable_fn(void *priv, const struct tp_tensor *t)
{
	return true;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* What an empty timed interval measures: subtracted from every sample. */
static uint64_t clock_overhead;

static void calibrate(void)
{
	uint64_t d[1001];

	for (int i = 0; i < 1001; i++) {
		uint64_t t0 = mono_ns();

		d[i] = mono_ns() - t0;
	}
	qsort(d, 1001, sizeof(d[0]), cmp_u64);
	clock_overhead = d[500];
}

static void fresh(size_t i)
{
	struct tp_tensor *t = &pool[i];

	memset(t, 0, sizeof(*t));
	t->id = i + 1;
	/* sizes over three decades, as activations of a network are */
	t->bytes = (size_t)(4096 * pow(1000, (double)(rnd() % 1000) / 1000));
	t->nr_pages = t->resident_pages = 1;
	t->last_access_ns = now - rnd() % 1000000;
	t->computable = true;
	t->pol.idx = -1;
	cost[i] = (double)(1000 + rnd() % 100000);
}

static void row(const char *filter, const char *search, size_t n,
		unsigned decisions)
{
	static const struct tp_cost_ops cops = {
		.recompute_ns = cost_fn, .computable = computable_fn,
	};
	struct tp_ctx ctx;
	struct tp_policy *pol;
	const struct tp_victim_ops *ops;
	uint64_t *lat = malloc(decisions * sizeof(*lat));
	size_t extra = n;	/* spare slots for incoming tensors */
	size_t *spare = malloc(extra * sizeof(*spare)), nspare = 0;
	unsigned warm = decisions / 10;

	pool = calloc(2 * n, sizeof(*pool));
	cost = calloc(2 * n, sizeof(*cost));
	if (!lat || !spare || !pool || !cost) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memset(&ctx, 0, sizeof(ctx));
	tp_conf_defaults(&ctx.conf);
	tp_conf_set(&ctx.conf, "policy.filter", filter, "bench", 0);
	/* "tree" and "scan" force how exact search answers; "exact" is
	 * the default, which picks between them. */
	tp_conf_set(&ctx.conf, "policy.search",
		    strcmp(search, "sample") ? "exact" : "sample", "bench", 0);
	pol = tp_policy_create(&ctx.conf, ctx.pager, ctx.vmm);
	if (!pol) {
		perror("tp_policy_create");
		exit(1);
	}
	tp_policy_set_clock(pol, clock_fn, NULL);
	tp_policy_set_cost_ops(pol, &cops);
	tp_policy_seed(pol, rng);
	if (!strcmp(search, "tree"))
		tp_policy_set_index_mode(pol, 1);
	else if (!strcmp(search, "scan"))
		tp_policy_set_index_mode(pol, 2);
	ops = tp_policy_victim_ops(pol);
	now = 1ull << 40;
	for (size_t i = 0; i < n; i++) {
		fresh(i);
		ops->add(ops->priv, &pool[i]);
	}
	for (size_t i = n; i < 2 * n; i++)
		spare[nspare++] = i;

	for (unsigned d = 0; d < warm + decisions; d++) {
		struct tp_tensor *v = NULL;
		enum tp_leave how;
		size_t in;
		uint64_t t0, t1;

		/* an op's worth of time passes; a tensor is touched */
		now += 1000 + rnd() % 10000;
		in = spare[--nspare];
		fresh(in);
		pool[in].last_access_ns = now;
		{
			struct tp_tensor *u = &pool[rnd() % (2 * n)];

			if (u->pol.idx >= 0 && u->bytes) {
				u->last_access_ns = now;
				ops->touch(ops->priv, u);
			}
		}
		t0 = mono_ns();
		if (ops->choose(ops->priv, pool[in].bytes, false, &v, &how)) {
			fprintf(stderr, "choose failed\n");
			exit(1);
		}
		ops->del(ops->priv, v);
		ops->add(ops->priv, &pool[in]);
		t1 = mono_ns();
		spare[nspare++] = (size_t)(v - pool);
		if (d >= warm)
			lat[d - warm] = t1 - t0 > clock_overhead ?
					t1 - t0 - clock_overhead : 0;
	}
	qsort(lat, decisions, sizeof(*lat), cmp_u64);
	printf("%-7s %-7s %7zu %10llu %10llu\n", filter, search, n,
	       (unsigned long long)lat[decisions / 2],
	       (unsigned long long)lat[(size_t)(decisions * 0.99)]);
	fflush(stdout);
	tp_policy_destroy(pol);
	free(pool);
	free(cost);
	free(spare);
	free(lat);
}

static const char *verdict(const struct tp_replay_result *r)
{
	switch (r->status) {
	case TP_REPLAY_OK:
		return "fits";
	case TP_REPLAY_OOM:
		return "oom";
	case TP_REPLAY_THRASH:
		return "thrash";
	default:
		return "error";
	}
}

static int sim_table(const char *only)
{
	static const struct {
		const char *name;
		struct tp_trace_gen_opts o;
	} models[] = {
		{ "cnn", { TP_TRACE_GEN_CNN, TP_TRACE_GEN_SGD, 64, 16, 64, 56,
			   0, 1000, 2 } },
		{ "transformer", { TP_TRACE_GEN_TRANSFORMER,
				   TP_TRACE_GEN_ADAM, 32, 12, 768, 128, 12,
				   30522, 2 } },
	};
	static const char *const policies[][2] = {
		{ "delta", "delta" }, { "delta", "delta-overlap" },
		{ "lru", "delta" }, { "delta", "evict" }, { "lru", "evict" },
		{ "dtr", "evict" }, { "msps", "delta" }, { "delta", "offload" },
		{ "lru", "offload" },
	};
	static const unsigned pct[] = { 100, 75, 50, 35 };
	struct tp_replay_opts o = {
		.prefetch = -1,
		.remap_ns = -1,
		.iterations = 1,
		.extra = "vmm.sim.driver_granule=2M",
	};

	printf("# sim backend, H100 costs, driver costs per 2 MiB granule; budget %% of the unconstrained peak\n");
	printf("%-11s %-20s %4s %-6s %10s %7s %7s %7s %14s\n", "trace",
	       "policy", "pct", "result", "extra_%", "evict", "offload",
	       "recomp", "pf_hit/iss/late");
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
		struct tp_replay_result u, r;
		struct tp_trace *t;

		if (only && strcmp(only, models[m].name))
			continue;
		if (tp_trace_generate(&models[m].o, &t))
			return 1;
		o.budget_bytes = 0;
		o.thrash_limit = 0;
		if (tp_replay_run(t, &o, &u) || u.status != TP_REPLAY_OK) {
			tp_trace_free(t);
			return 1;
		}
		printf("# %s: unconstrained peak %llu bytes, %.3f ms\n",
		       models[m].name, (unsigned long long)u.phys_peak,
		       (double)u.time_ns / 1e6);
		for (size_t b = 0; b < sizeof(pct) / sizeof(pct[0]); b++) {
			for (size_t p = 0; p < sizeof(policies) /
					       sizeof(policies[0]); p++) {
				char name[32];

				o.budget_bytes = u.phys_peak * pct[b] / 100;
				o.filter = policies[p][0];
				o.director = policies[p][1];
				o.thrash_limit = 20;
				if (tp_replay_run(t, &o, &r))
					r.status = TP_REPLAY_ERROR;
				snprintf(name, sizeof(name), "%s/%s",
					 policies[p][0], policies[p][1]);
				printf("%-11s %-20s %4u %-6s %10.1f %7llu %7llu %7llu %6llu/%llu/%llu\n",
				       models[m].name, name, pct[b],
				       verdict(&r),
				       r.status == TP_REPLAY_OK ?
				       100.0 * ((double)r.time_ns -
						(double)u.time_ns) /
				       (double)u.time_ns : NAN,
				       (unsigned long long)r.evictions,
				       (unsigned long long)r.offloads,
				       (unsigned long long)r.recomputes,
				       (unsigned long long)r.prefetch_hits,
				       (unsigned long long)r.prefetch_issued,
				       (unsigned long long)r.prefetch_late);
				fflush(stdout);
			}
		}
		tp_trace_free(t);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const filters[] = {
		"delta", "lru", "greedy", "dtr", "msps", "coop",
	};
	static const size_t sizes[] = { 1000, 10000, 100000 };
	unsigned decisions;

	if (argc > 1 && !strcmp(argv[1], "sim"))
		return sim_table(argc > 2 ? argv[2] : NULL);
	decisions = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;

	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	if (!decisions || !rng) {
		fprintf(stderr, "usage: %s [decisions] [seed]\n", argv[0]);
		return 2;
	}
	calibrate();
	printf("# decision = choose + del(victim) + add(new); %u per row, seed %llu\n",
	       decisions, (unsigned long long)rng);
	printf("# clock read overhead %llu ns, subtracted\n",
	       (unsigned long long)clock_overhead);
	printf("%-7s %-7s %7s %10s %10s\n", "filter", "search", "N",
	       "median_ns", "p99_ns");
	if (argc > 5) {
		row(argv[3], argv[4], (size_t)atol(argv[5]), decisions);
		return 0;
	}
	for (size_t s = 0; s < 3; s++) {
		for (size_t f = 0; f < 6; f++)
			row(filters[f], "exact", sizes[s], decisions);
		row("delta", "tree", sizes[s], decisions);
		row("delta", "scan", sizes[s], decisions);
		row("delta", "sample", sizes[s], decisions);
		row("dtr", "sample", sizes[s], decisions);
	}
	return 0;
}
