/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>

#include "base/array.h"

void *tp_array_grow(void *arr, size_t *cap, size_t need, size_t size,
		    size_t first)
{
	size_t nc;
	void *p;

	if (need <= *cap && arr)
		return arr;
	nc = *cap ? *cap : (first ? first : 1);
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return NULL;
		nc *= 2;
	}
	if (size && nc > SIZE_MAX / size)
		return NULL;
	p = realloc(arr, nc * size);
	if (!p)
		return NULL;
	*cap = nc;
	return p;
}
