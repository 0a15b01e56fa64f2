/* SPDX-License-Identifier: MIT */
/*
 * Small CPU ops on float buffers for lineage's tests: add, scale, an
 * elementwise nonlinearity, a reduction, an in-place op, a two-output op,
 * one that fails on demand and one that is not deterministic. Each checks
 * its sizes and returns -EINVAL when they do not fit.
 */
#ifndef TP_TESTS_LINEAGE_TESTOPS_H
#define TP_TESTS_LINEAGE_TESTOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tpager.h"

/* out = a + b (b repeated over a's length); out is a's size. */
extern const struct tp_op_type tops_add;
/*
 * out = a + b, a, b and out of one size, a row a float: splittable, each
 * part reading its own rows alone (TP_OP_SPLIT_LOCAL).
 */
extern const struct tp_op_type tops_addrows;
/* out = a * s + c; params: struct tops_scale_params. */
extern const struct tp_op_type tops_scale;
/* out = a / (1 + |a|) (softsign). */
extern const struct tp_op_type tops_softsign;
/* out[j] = sum over i = j mod m of a[i] / 64, m = out floats. */
extern const struct tp_op_type tops_reduce;
/* In place: out = max(a, 0) * 0.5 + 0.25 (output 0 is input 0). */
extern const struct tp_op_type tops_relu_;
/* Two outputs of a's size: a + 1 and softsign(a) - a / 2. */
extern const struct tp_op_type tops_split2;
/* out = a, but fails with params' errno (an int) when it is not 0. */
extern const struct tp_op_type tops_fail;
/* out = a + (a counter of runs): a replay would differ. */
extern const struct tp_op_type tops_nondet;
/* In place and failing: params' errno (an int) before writing. */
extern const struct tp_op_type tops_fail_;

struct tops_scale_params {
	float s, c;
};

/*
 * center: x[rows][cols] -> y[rows][cols] = x - m, m[cols] the mean of x's
 * rows (each row added in turn, then divided, in float). Splittable: x
 * and y cut by rows; part 0 of plain parts reads every row for m; parts
 * that sum do so in two passes, the last reading m alone
 * (TP_OP_SPLIT_LAST_READS).
 */
struct tops_center_params {
	uint32_t rows, cols;
};

extern const struct tp_op_type tops_center;

/*
 * Does nothing: on sim an op costs its prior (1 µs) and runs nothing. For
 * tests of what lineage and the policy decide, not of the data.
 */
extern const struct tp_op_type tops_nop;

/*
 * gen: no input, one output of @floats floats, each from a hash of
 * (@seed, its index): a tensor lineage can regenerate, with data.
 */
struct tops_gen_params {
	uint32_t seed;
	uint32_t floats;
};

extern const struct tp_op_type tops_gen;

/* @t's bytes, read into a new buffer (the test bails out on failure). */
void *tops_contents(struct tp_ctx *ctx, struct tp_tensor *t);

/* Whether @t reads back as the tp_tensor_size(@t) bytes at @ref. */
bool tops_same(struct tp_ctx *ctx, struct tp_tensor *t, const void *ref);

/*
 * tops_nop on @a, and @b where it is not NULL, into a new output of
 * @bytes; a failure bails out of the test, naming the library's error.
 */
struct tp_tensor *tops_nop_run(struct tp_ctx *ctx, struct tp_tensor *a,
			       struct tp_tensor *b, size_t bytes);

/*
 * A new tensor of @bytes the program wrote (uncomputable; on sim, with no
 * data): the first input of tops_nop chains. A failure bails out.
 */
struct tp_tensor *tops_written(struct tp_ctx *ctx, size_t bytes);

/*
 * A new tensor of @bytes acquired for writing (room made for it), filled
 * with 0x5a and released, into *@out: 0, or -errno with *@out NULL and
 * nothing left behind.
 */
int tops_request(struct tp_ctx *ctx, size_t bytes, struct tp_tensor **out);

/* Launches so far (first runs and replays), and replays alone. */
extern unsigned long tops_launches, tops_replays;
/* Launches the pager took for a replay when they were not, or not when
 * they were (tp_pager_replaying()). */
extern unsigned long tops_replay_mismatches;

/* A deterministic pseudo-random generator for the tests (xorshift64*). */
uint64_t tops_rand(uint64_t *state);

/* A new uncomputable tensor of @n floats filled from @seed. NULL on error. */
struct tp_tensor *tops_input(struct tp_ctx *ctx, size_t n, uint64_t seed);
/*
 * Run @type (params @p of @plen bytes) on the one input @in into one new
 * output of @bytes. NULL on failure, said as a TAP diagnostic.
 */
struct tp_tensor *tops_run1(struct tp_ctx *ctx, const struct tp_op_type *type,
			    const void *p, size_t plen, struct tp_tensor *in,
			    size_t bytes);

/* The host-side references of the ops, for expected values. */
float tops_ref_scale(float a, float s, float c);
float tops_ref_softsign(float a);
float tops_ref_relu(float a);

#endif /* TP_TESTS_LINEAGE_TESTOPS_H */
