/* SPDX-License-Identifier: MIT */
/*
 * What a replay waiting on a regeneration is still to read does not
 * leave to make room for the regeneration (tp_lineage_regen_reads()):
 * it is read now, as far as the room-making of the walk is concerned.
 *
 * c = op(a, bK), bK the end of a chain b1 .. bK from x0, each freed once
 * the next is made; a made first, then junk the program never reads
 * again. c and bK are evicted and c read, with the budget full: the walk
 * regenerates b1 .. bK, each replay making room, while c's replay waits
 * to read a. Under overlap/delta-overlap with no record, size and
 * staleness rank the candidates and a, the largest and stalest, went
 * first: it was regenerated again when c's replay came to read it (K + 2
 * replays). The walk now replays K + 1 ops, and a stays.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"
#include "tpager.h"

#define CHUNK	(64u << 10)
#define K	4
#define JUNK	8
#define A	4	/* a's chunks: the largest, and stalest */

int main(void)
{
	struct tp_tensor *x0, *a, *b, *c;
	struct tp_stats s0, s1;
	struct tp_ctx *ctx;
	char opts[512];

	plan_tests(2);
	/* x0, a, the junk and c: full once c is made */
	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.chunk_size=64K,pager.budget=%u,"
		 "pager.rescue=0,pager.range_cache=0,policy.prefetch=0,"
		 "policy.filter=overlap,policy.director=delta-overlap",
		 (2 + A + JUNK + 1) * CHUNK);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("tp_ctx_create: %s", strerror(errno));
	x0 = tops_written(ctx, CHUNK);
	a = tops_nop_run(ctx, x0, NULL, A * CHUNK);
	/* made after a, never read again */
	for (unsigned i = 0; i < JUNK; i++)
		tops_nop_run(ctx, x0, NULL, CHUNK);
	b = tops_nop_run(ctx, x0, NULL, CHUNK);
	for (unsigned i = 1; i < K; i++) {
		struct tp_tensor *n = tops_nop_run(ctx, b, NULL, CHUNK);

		tp_tensor_free(ctx, b);
		b = n;
	}
	c = tops_nop_run(ctx, a, b, CHUNK);
	if (tp_tensor_evict(ctx, b) || tp_tensor_evict(ctx, c))
		bail_out("tp_tensor_evict");
	/* the room the evictions freed is taken again */
	for (unsigned i = 0; i < 2; i++)
		if (!tops_nop_run(ctx, x0, NULL, CHUNK))
			bail_out("filler");
	tp_stats_get(ctx, &s0);
	ok(tp_tensor_acquire(ctx, c, TP_READ) != NULL, "c read: %s",
	   tp_last_error(ctx));
	tp_tensor_release(ctx, c);
	tp_stats_get(ctx, &s1);
	ok(s1.recomputes - s0.recomputes == K + 1 && !tp_pager_has_evicted(a),
	   "the walk replayed %llu ops (K + 1 = %u), a %s",
	   (unsigned long long)(s1.recomputes - s0.recomputes), K + 1,
	   tp_pager_has_evicted(a) ? "sent away" : "kept");
	diag("evictions %llu offloads %llu reloads %llu",
	     (unsigned long long)(s1.evictions - s0.evictions),
	     (unsigned long long)(s1.offloads - s0.offloads),
	     (unsigned long long)(s1.reloads - s0.reloads));
	tp_ctx_destroy(ctx);
	return exit_status();
}
