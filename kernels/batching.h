/* SPDX-License-Identifier: MIT */
/*
 * Batch invariance, as found on this machine. A split run's part computes
 * its rows (images, tokens, products) as a problem of that many rows and
 * must give each the bits a whole run gave it. BLAS and cuDNN promise the
 * same bits for the same call, not that a row comes out the same in a
 * problem of another size: a library may choose another kernel, tile or
 * split its sums by the problem's shape. So a caller checks, the first
 * time a shape runs on a given number of rows, a few rows against each
 * computed alone (a problem of one row, the same for every batch and
 * part), and notes here what it found; a shape that once differed runs
 * one row at a time from then on.
 */
#ifndef TP_KERNELS_BATCHING_H
#define TP_KERNELS_BATCHING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tp_batching {
	TP_BATCHING_UNCHECKED,	/* run as one problem, then check */
	TP_BATCHING_CHECKED,	/* this many rows agreed with one alone */
	TP_BATCHING_SINGLE,	/* one row at a time */
};

/*
 * tp_batching_of() - what is known of the shape named by the @len bytes
 * at @key (a caller's struct, zeroed before it is filled, naming the
 * device too) on a problem of @rows rows.
 */
enum tp_batching tp_batching_of(const void *key, size_t len, uint32_t rows);

/*
 * tp_batching_note() - record a check of @rows rows: @same, the rows
 * agreed with each alone; else the shape runs one row at a time from now.
 * Nothing is recorded without memory (the next run checks again).
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

/*
 * tp_batching_run() - @rows rows of the shape keyed by @key (as for
 * tp_batching_of()): one at a time where that shape once differed, or for
 * one row; else as one problem, the first of its shape and row count
 * checked on rows 0, 1 and the last, and redone one at a time, before
 * anything reads it, when a row differs.
 * Return: 0 or what an op returned.
 */
int tp_batching_run(const void *key, size_t len, uint32_t rows,
		    const struct tp_batching_ops *ops, void *priv);

#endif /* TP_KERNELS_BATCHING_H */
