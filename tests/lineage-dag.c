/* SPDX-License-Identifier: MIT */
/*
 * Random DAGs of 1,000 ops over tensors of random sizes, run twice: with
 * room for everything, then under a budget that keeps evicting and
 * offloading. Every tensor still alive at the end must hold the same bits
 * in both runs, and the second run must have regenerated tensors.
 *
 * TP_TEST_SEED=<n> replays one seed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

#define NOPS	1000
#define NIN	8		/* uncomputable inputs */
#define MAXT	(NIN + 2 * NOPS)

struct run {
	struct tp_tensor *t[MAXT];
	bool freed[MAXT];
	unsigned n;
	struct tp_stats st;
	struct tp_lineage_stats lst;
};

static size_t rand_floats(uint64_t *s)
{
	/* 256 B .. 160 KiB: from a fraction of a chunk to three chunks */
	return 64 + tops_rand(s) % 40960;
}

/* A live tensor, recent ones more likely (deeper chains). */
static unsigned pick(struct run *r, uint64_t *s)
{
	unsigned i;

	do {
		if (tops_rand(s) % 4)
			i = r->n - 1 - (unsigned)(tops_rand(s) % (r->n < 24 ? r->n : 24));
		else
			i = (unsigned)(tops_rand(s) % r->n);
	} while (r->freed[i]);
	return i;
}

/* The same program for both runs: every choice comes from @seed. */
static int program(struct tp_ctx *ctx, struct run *r, uint64_t seed)
{
	uint64_t s = seed;
	unsigned op, i;
	int ret;

	for (i = 0; i < NIN; i++) {
		r->t[r->n] = tops_input(ctx, rand_floats(&s), tops_rand(&s));
		if (!r->t[r->n])
			return -errno;
		r->n++;
	}
	for (op = 0; op < NOPS; op++) {
		struct tp_tensor *in[2], *out[2] = { NULL, NULL };
		unsigned a = pick(r, &s), b = pick(r, &s), kind, n_in = 1,
			 n_out = 1, k;
		size_t bytes[2];
		struct tops_scale_params sp = {
			.s = 0.5f + (float)(tops_rand(&s) % 100) / 100.0f,
			.c = (float)(tops_rand(&s) % 9) / 8.0f - 0.5f,
		};
		const struct tp_op_type *type;
		const void *p = NULL;
		size_t plen = 0;

		in[0] = r->t[a];
		in[1] = r->t[b];
		bytes[0] = bytes[1] = tp_tensor_size(in[0]);
		kind = (unsigned)(tops_rand(&s) % 12);
		switch (kind) {
		case 0: case 1: case 2:
			type = &tops_add;
			n_in = 2;
			break;
		case 3: case 4:
			type = &tops_scale;
			p = &sp;
			plen = sizeof(sp);
			break;
		case 5: case 6:
			type = &tops_softsign;
			break;
		case 7:
			type = &tops_reduce;
			bytes[0] = sizeof(float) *
				   (1 + tops_rand(&s) % (bytes[0] / sizeof(float)));
			break;
		case 8: case 9:
			type = &tops_split2;
			n_out = 2;
			break;
		default:
			/*
			 * In place on a computable tensor: the output takes
			 * its address, the handle keeps the old version. (In
			 * place on an input would sever most of the graph:
			 * lineage-inplace tests that.)
			 */
			type = in[0]->computable ? &tops_relu_ : &tops_softsign;
			break;
		}
		ret = tp_op_run(ctx, type, p, plen, in, n_in, out, bytes, n_out);
		if (ret) {
			diag("op %u (%s): %s: %s", op, type->name,
			     tp_strerror(ret), tp_last_error(ctx));
			return ret;
		}
		/* A parameter updated in place is the same handle. */
		for (k = 0; k < n_out; k++)
			if (out[k] != in[0])
				r->t[r->n++] = out[k];
		/* Free some: fake deletion when others still need them,
		 * memory kept for the records that read a freed input. */
		if (tops_rand(&s) % 3 == 0) {
			i = pick(r, &s);
			if (i >= NIN || op > NOPS / 2) {
				ret = tp_tensor_free(ctx, r->t[i]);
				if (ret)
					return ret;
				r->freed[i] = true;
			}
		}
	}
	return 0;
}

static struct tp_ctx *make_ctx(bool tight)
{
	const char *budget = getenv("TP_DAG_BUDGET");
	char opts[256];

	if (!budget)
		budget = "pager.budget=8M,pager.host_budget=4M";
	snprintf(opts, sizeof(opts),
		 "vmm.backend=host,pager.rescue=0,vmm.chunk_size=64K,pager.slab_fraction=0,%s",
		 tight ? budget : "pager.budget=1G");
	return tp_ctx_create(opts);
}

int main(void)
{
	static struct run r1, r2;
	struct tp_ctx *ctx;
	uint64_t seed;
	unsigned i, live = 0, same = 0;
	void **data;
	const char *env = getenv("TP_TEST_SEED");
	int ret;

	seed = env ? strtoull(env, NULL, 0) : 0x5eed0001ULL;
	plan_tests(10);
	diag("seed %#" PRIx64 " (TP_TEST_SEED to replay)", seed);

	/* Run 1: room for everything. */
	ctx = make_ctx(false);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	ret = program(ctx, &r1, seed);
	ok_rc(ret, "run 1: %d ops, no memory pressure", NOPS);
	data = calloc(MAXT, sizeof(*data));
	for (i = 0; !ret && i < r1.n; i++) {
		size_t len;

		if (r1.freed[i])
			continue;
		len = tp_tensor_size(r1.t[i]);
		data[i] = malloc(len);
		if (!data[i] || tp_tensor_read(ctx, r1.t[i], 0, data[i], len))
			bail_out("run 1: reading tensor %u", i);
	}
	tp_stats_get(ctx, &r1.st);
	tp_lineage_get_stats(ctx->lineage, &r1.lst);
	ok(r1.st.evictions == 0 && r1.st.offloads == 0,
	   "run 1 evicted and offloaded nothing (%llu replays of in-place inputs)",
	   (unsigned long long)r1.st.recomputes);
	tp_ctx_destroy(ctx);

	/* Run 2: a budget of 128 chunks of 64K, host swap of 64
	 * (TP_DAG_BUDGET="pager.budget=...,pager.host_budget=..." to change). */
	ctx = make_ctx(true);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	ret = program(ctx, &r2, seed);
	ok_rc(ret, "run 2: the same ops under an 8M budget");
	tp_lineage_get_stats(ctx->lineage, &r2.lst);
	diag("run 2: %llu replays while running the ops",
	     (unsigned long long)r2.lst.replays);
	ok(r2.n == r1.n, "same tensors (%u)", r2.n);
	ok(r2.lst.kept > 0 && r2.lst.fake_deleted > 0,
	   "%llu freed inputs kept for their readers, %llu tensors fake-deleted",
	   (unsigned long long)r2.lst.kept,
	   (unsigned long long)r2.lst.fake_deleted);
	for (i = 0; !ret && i < r2.n; i++) {
		size_t len;
		void *buf;

		if (r2.freed[i])
			continue;
		len = tp_tensor_size(r2.t[i]);
		live++;
		buf = malloc(len);
		if (buf && !tp_tensor_read(ctx, r2.t[i], 0, buf, len) &&
		    !memcmp(buf, data[i], len))
			same++;
		else
			diag("tensor %u differs (%s)", i, tp_last_error(ctx));
		free(buf);
	}
	ok(live > 0 && same == live, "every live tensor bit-identical (%u of %u)",
	   same, live);
	tp_stats_get(ctx, &r2.st);
	tp_lineage_get_stats(ctx->lineage, &r2.lst);
	ok(r2.st.recomputes > 0, "recomputes: %llu (%llu ns)",
	   (unsigned long long)r2.st.recomputes,
	   (unsigned long long)r2.st.recompute_ns);
	ok(r2.st.evictions > 0, "evictions: %llu", (unsigned long long)r2.st.evictions);
	ok(r2.st.offloads > 0, "offloads: %llu, reloads %llu",
	   (unsigned long long)r2.st.offloads, (unsigned long long)r2.st.reloads);
	ok(r2.st.chunks_peak * r2.st.chunk_size <= r2.st.budget_bytes,
	   "peak %llu chunks of a budget of %llu",
	   (unsigned long long)r2.st.chunks_peak,
	   (unsigned long long)(r2.st.budget_bytes / r2.st.chunk_size));
	diag("run 2: %llu replays, deepest %llu, %llu pin drops, %llu scratch outputs, %llu severed, records peak %llu",
	     (unsigned long long)r2.lst.replays,
	     (unsigned long long)r2.lst.max_depth,
	     (unsigned long long)r2.lst.pin_drops,
	     (unsigned long long)r2.lst.scratch_outputs,
	     (unsigned long long)r2.lst.severed,
	     (unsigned long long)r2.lst.records_peak);
	tp_ctx_destroy(ctx);
	for (i = 0; i < MAXT; i++)
		free(data[i]);
	free(data);
	return exit_status();
}
