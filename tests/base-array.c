/* SPDX-License-Identifier: MIT */
/* tp_array_grow(): the one rule by which the library's arrays grow. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/array.h"
#include "tap.h"

int main(void)
{
	size_t cap = 0, cap0;
	int *a, *b;

	plan_tests(6);

	a = tp_array_grow(NULL, &cap, 1, sizeof(*a), 16);
	ok(a && cap == 16, "a new array takes the first capacity (16: %zu)",
	   cap);
	a[15] = 7;
	b = tp_array_grow(a, &cap, 16, sizeof(*a), 16);
	ok(b == a && cap == 16, "room enough: the same array, no realloc");
	a = tp_array_grow(a, &cap, 17, sizeof(*a), 16);
	ok(a && cap == 32 && a[15] == 7,
	   "one past: the capacity doubles, the contents stay (%zu)", cap);
	a = tp_array_grow(a, &cap, 200, sizeof(*a), 16);
	ok(a && cap == 256, "far past: doubles until it fits (%zu)", cap);
	cap0 = cap;
	b = tp_array_grow(a, &cap, SIZE_MAX / 2, sizeof(*a), 16);
	ok(!b && cap == cap0 && a[15] == 7,
	   "a size that overflows: NULL, the array and its capacity as they were");
	free(a);
	cap = 0;
	a = tp_array_grow(NULL, &cap, 100, sizeof(*a), 0);
	ok(a && cap == 128, "no first capacity: from 1, doubled (%zu)", cap);
	free(a);
	return exit_status();
}
