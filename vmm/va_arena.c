// SPDX-License-Identifier: MIT
/*
 * The address-space arena (va_arena.h): a sorted list of holes, first
 * fit, merged with their neighbours when ranges come back. Ranges are a
 * step's tensors, hundreds, so a list will do.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "vmm/va_arena.h"

int tp_va_arena_init(struct tp_va_arena *a, uintptr_t base, size_t len,
		     size_t align)
{
	memset(a, 0, sizeof(*a));
	a->holes = tp_array_grow(NULL, &a->cap_holes, 1, sizeof(*a->holes),
				 16);
	if (!a->holes)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	a->base = base;
	a->len = len;
	a->align = align;
	a->holes[0] = (struct tp_va_hole){ base, len };
	a->nholes = 1;
	return 0;
}

void tp_va_arena_fini(struct tp_va_arena *a)
{
	free(a->holes);
	a->holes = NULL;
	a->nholes = 0;
	pthread_mutex_destroy(&a->lock);
}

bool tp_va_arena_owns(const struct tp_va_arena *a, uintptr_t va)
{
	return a->holes && va >= a->base && va - a->base < a->len;
}

bool tp_va_arena_alloc(struct tp_va_arena *a, size_t len, uintptr_t *va)
{
	size_t need = len + a->align;	/* the guard granule after it */
	bool got = false;

	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->nholes; i++) {
		struct tp_va_hole *h = &a->holes[i];

		if (h->len < need)
			continue;
		*va = h->start;
		h->start += need;
		h->len -= need;
		if (!h->len) {
			memmove(h, h + 1, (a->nholes - i - 1) * sizeof(*h));
			a->nholes--;
		}
		a->ranges++;
		got = true;
		break;
	}
	pthread_mutex_unlock(&a->lock);
	return got;
}

int tp_va_arena_free(struct tp_va_arena *a, uintptr_t va, size_t len)
{
	size_t n = len + a->align, i;
	struct tp_va_hole *h;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	a->ranges--;
	/* The first hole past it. */
	for (i = 0; i < a->nholes && a->holes[i].start < va; i++)
		;
	h = a->holes;
	if (i > 0 && h[i - 1].start + h[i - 1].len == va) {
		h[i - 1].len += n;
		if (i < a->nholes && va + n == h[i].start) {
			h[i - 1].len += h[i].len;
			memmove(&h[i], &h[i + 1],
				(a->nholes - i - 1) * sizeof(*h));
			a->nholes--;
		}
	} else if (i < a->nholes && va + n == h[i].start) {
		h[i].start = va;
		h[i].len += n;
	} else {
		h = tp_array_grow(a->holes, &a->cap_holes, a->nholes + 1,
				  sizeof(*h), 2 * a->nholes);
		if (!h) {
			ret = -ENOMEM;
			goto out;
		}
		a->holes = h;
		memmove(&h[i + 1], &h[i], (a->nholes - i) * sizeof(*h));
		h[i] = (struct tp_va_hole){ va, n };
		a->nholes++;
	}
out:
	pthread_mutex_unlock(&a->lock);
	return ret;
}
