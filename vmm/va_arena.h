/* SPDX-License-Identifier: MIT */
/*
 * The address-space arena (vmm.va_reserve). Reserving and freeing address
 * space are driver calls like mapping (cuMemAddressReserve and
 * cuMemAddressFree), made for every range a tensor or a slab needs, and
 * in a budgeted step they were a third of the calls. Address space is
 * plentiful where memory is not, so the vmm reserves one large region
 * once and carves the ranges from it: first fit over the holes, each
 * range followed by a free granule of va_align, as the backends' own
 * reservations are, so that an overrun never lands in another range. A
 * range that does not fit is reserved from the backend as before.
 *
 * Thread-safe: ranges go back from the driver thread too.
 */
#ifndef TP_VMM_VA_ARENA_H
#define TP_VMM_VA_ARENA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp_va_hole {
	uintptr_t start;
	size_t len;
};

struct tp_va_arena {
	pthread_mutex_t lock;
	uintptr_t base;
	size_t len;
	size_t align;
	struct tp_va_hole *holes;	/* address order, never adjacent */
	size_t nholes, cap_holes;
	size_t ranges;			/* carved and not yet freed */
};

/**
 * tp_va_arena_init() - an arena over [@base, @base + @len), reserved by
 * the caller, whose ranges start on @align (a power of two that @base and
 * @len are multiples of). Return: 0 or -ENOMEM.
 */
int tp_va_arena_init(struct tp_va_arena *a, uintptr_t base, size_t len,
		     size_t align);

/* tp_va_arena_fini() - forget the holes; the caller frees the region. */
void tp_va_arena_fini(struct tp_va_arena *a);

/**
 * tp_va_arena_alloc() - carve @len bytes (a multiple of align) into *@va.
 * Return: whether a hole held them (and the guard granule after them).
 */
bool tp_va_arena_alloc(struct tp_va_arena *a, size_t len, uintptr_t *va);

/* tp_va_arena_owns() - whether @va lies in the arena. */
bool tp_va_arena_owns(const struct tp_va_arena *a, uintptr_t va);

/**
 * tp_va_arena_free() - give back the range of @len bytes carved at @va.
 * Return: 0, or -ENOMEM when the hole list could not grow (the range is
 * then lost to the arena, never handed out twice).
 */
int tp_va_arena_free(struct tp_va_arena *a, uintptr_t va, size_t len);

#endif /* TP_VMM_VA_ARENA_H */
