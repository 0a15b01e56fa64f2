/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays: one rule for every array the library grows as it
 * goes, so that no caller writes the doubling and its failure path out
 * by hand.
 */
#ifndef TP_BASE_ARRAY_H
#define TP_BASE_ARRAY_H

#include <stddef.h>

/**
 * tp_array_grow() - room for at least @need elements of @size bytes.
 * @arr:   the array, or NULL when it has none yet.
 * @cap:   its capacity in elements; updated when the array grows.
 * @need:  the elements it must hold (at least 1).
 * @size:  bytes per element.
 * @first: the capacity of a new array; a grown one doubles until @need
 *         fits.
 *
 * Return: @arr itself when it already holds @need, else the grown array
 * (@arr is then gone); NULL when memory runs out or the size overflows,
 * with @arr and *@cap unchanged.
 */
void *tp_array_grow(void *arr, size_t *cap, size_t need, size_t size,
		    size_t first);

#endif /* TP_BASE_ARRAY_H */
