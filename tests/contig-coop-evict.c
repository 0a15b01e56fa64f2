/* SPDX-License-Identifier: MIT */
/*
 * Coop under the pager (policy.filter = coop, vmm.mode = contiguous): room
 * for a run is made by evicting only tensors whose chunks the run then
 * takes (Coop §3.3: no tensor is evicted "innocently"), and every evicted
 * tensor regenerates to the same bytes.
 */
#include "config.h"

#include <math.h>

#include "tests/pager-util.h"
#include "tests/lineage-testops.h"
/* White box: the chunks behind a tensor's pages. */
#include "pager/pager_int.h"

#define NY 8
#define BIG 3

static long first_chunk(const struct tp_tensor *t)
{
	return t->pages && t->pages[0].chunk ? (long)t->pages[0].chunk->index : -1;
}

int main(void)
{
	static const struct tops_scale_params sp = { 1.5f, 0.5f };
	struct tp_ctx *ctx;
	struct tp_tensor *x, *y[NY], *z;
	long at[NY], zat;
	size_t c, nf, innocent = 0, evicted = 0, wrong = 0;
	float *xv, *got;
	uint64_t seed;

	pt_skip_unless_contiguous_backend();
	pt_probe();
	seed = pt_seed();
	plan_tests(4);
	ctx = pt_ctx("vmm.mode=contiguous,pager.budget=10C,pager.range_cache=0,"
		     "pager.slab_fraction=0,pager.high_watermark=100,"
		     "policy.filter=coop,policy.director=evict");
	c = pt_chunk(ctx);
	nf = c / sizeof(float);
	xv = malloc(c);
	got = malloc(BIG * c);
	x = tops_input(ctx, nf, seed);
	if (!x || tp_tensor_read(ctx, x, 0, xv, c))
		bail_out("input: %s", tp_last_error(ctx));
	for (int i = 0; i < NY; i++) {
		y[i] = NULL;
		if (tp_op_run(ctx, &tops_scale, &sp, sizeof(sp), &x, 1, &y[i], &c, 1))
			bail_out("y%d: %s", i, tp_last_error(ctx));
		at[i] = first_chunk(y[i]);
	}
	/* 9 of 10 chunks held, one free at the end: 3 need two tensors out. */
	z = tp_tensor_create(ctx, BIG * c, TP_UNCOMPUTABLE);
	pt_fill(got, BIG * c, seed + 1);
	ok(z && tp_tensor_write(ctx, z, 0, got, BIG * c) == 0,
	   "a 3-chunk tensor fits after Coop made one run");
	zat = first_chunk(z);
	for (int i = 0; i < NY; i++) {
		if (y[i]->resident_pages)
			continue;
		evicted++;
		if (at[i] < zat || at[i] >= zat + BIG)
			innocent++;
	}
	ok(evicted >= 1 && evicted <= BIG && !innocent,
	   "%zu evicted, all inside the new run [%ld, %ld): none innocently",
	   evicted, zat, zat + BIG);
	{
		unsigned char *back = malloc(BIG * c), *want = malloc(BIG * c);

		pt_fill(want, BIG * c, seed + 1);
		ok(back && !tp_tensor_read(ctx, z, 0, back, BIG * c) &&
		   !memcmp(back, want, BIG * c), "the new tensor reads back");
		free(back);
		free(want);
	}
	tp_tensor_free(ctx, z);
	for (int i = 0; i < NY; i++) {
		if (tp_tensor_read(ctx, y[i], 0, got, c)) {
			wrong++;
			continue;
		}
		for (size_t k = 0; k < nf; k++)
			if (got[k] != tops_ref_scale(xv[k], sp.s, sp.c)) {
				wrong++;
				break;
			}
	}
	ok(!wrong, "every y reads back as scale(x), regenerated or not");
	for (int i = 0; i < NY; i++)
		tp_tensor_free(ctx, y[i]);
	tp_tensor_free(ctx, x);
	free(xv);
	free(got);
	tp_ctx_destroy(ctx);
	return exit_status();
}
