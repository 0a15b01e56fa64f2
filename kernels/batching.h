/* SPDX-License-Identifier: MIT */
/*
 * Batch invariance, as found on this machine. A split run's part computes
 * its rows (images, tokens, products) as a problem of that many rows and
 * must give each the bits a whole run gave it. BLAS and cuDNN promise the
 * same bits for the same call, not that a row comes out the same in a
 * problem of another size: a library may choose another kernel, tile or
 * split its sums by the problem's shape. The reference is a row computed
 * alone (a problem of one row, the same for every batch and part): the
 * first time a shape runs on a given number of rows, a few rows are
 * checked against it, and what was found is noted here.
 *
 * Where the whole run differed, a caller chooses (TP_BATCHING_ALONE):
 * redo it, and every later whole run of that shape, one row at a time,
 * so that parts can always give its bits (the CPU, where that costs
 * little); or keep whole runs one problem, at the library's speed, and
 * refuse parts of that shape (-ENOTSUP: the op then does not run in
 * parts; a GPU, where rows one at a time cost a step many times over).
 * A part whose own row count differed runs one row at a time.
 */
#ifndef TP_KERNELS_BATCHING_H
#define TP_KERNELS_BATCHING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tp_batching {
	TP_BATCHING_UNCHECKED,	/* not run on this many rows yet */
	TP_BATCHING_SAME,	/* this many rows agreed with each alone */
	TP_BATCHING_DIFFERS,	/* a row differed from itself alone */
};

/*
 * tp_batching_of() - what is known of the shape named by the @len bytes
 * at @key (a caller's struct, zeroed before it is filled, naming the
 * device too) on a problem of @rows rows.
 */
enum tp_batching tp_batching_of(const void *key, size_t len, uint32_t rows);

/*
 * tp_batching_note() - record a check of @rows rows: @same, the rows
 * agreed with each alone. Nothing is recorded without memory (the next
 * run checks again).
 */
void tp_batching_note(const void *key, size_t len, uint32_t rows, bool same);

/* What a caller of tp_batching_run() does with @rows rows (its @priv). */
struct tp_batching_ops {
	/* every row, as one problem */
	int (*all)(void *priv, uint32_t rows);
	/* one row at a time, each a problem of one row */
	int (*single)(void *priv, uint32_t rows);
	/* *@same: rows @pick[0..@n) computed alone are what all() wrote */
	int (*compare)(void *priv, const uint32_t *pick, unsigned n,
		       bool *same);
};

/* tp_batching_run() flags. */
#define TP_BATCHING_ALONE	(1u << 0)	/* whole runs that differ
						 * go one row at a time */

/*
 * tp_batching_run() - @rows of the op's @whole rows, of the shape keyed
 * by @key (as for tp_batching_of()). A whole run (@rows == @whole) is one
 * problem, the first of its shape and row count checked on rows 0, 1 and
 * the last; with TP_BATCHING_ALONE in @flags, one that differed is redone
 * one row at a time before anything reads it, and so is every later one.
 * Without it, a part is refused where the whole run differed. Else a part
 * is one problem where its row count agreed (checked the first time, and
 * redone one row at a time where a row differs), one row at a time where
 * it differed.
 * Return: 0, -ENOTSUP for a part that cannot give the whole run's bits,
 * or what an op returned.
 */
int tp_batching_run(const void *key, size_t len, uint32_t rows,
		    uint32_t whole, unsigned flags,
		    const struct tp_batching_ops *ops, void *priv);

#endif /* TP_KERNELS_BATCHING_H */
