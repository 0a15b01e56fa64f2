// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/symtab.h"

struct tp_sym_slot {
	uint64_t hash;		/* 0: empty */
	uint32_t key;		/* offset in the pool */
	uint32_t len;
	uint32_t val;
};

/* FNV-1a, forced non-zero so that 0 can mark an empty slot. */
static uint64_t sym_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

int tp_symtab_init(struct tp_symtab *st)
{
	memset(st, 0, sizeof(*st));
	st->slots = calloc(64, sizeof(*st->slots));
	if (!st->slots)
		return -ENOMEM;
	st->mask = 63;
	return 0;
}

void tp_symtab_fini(struct tp_symtab *st)
{
	free(st->slots);
	free(st->pool);
	memset(st, 0, sizeof(*st));
}

static struct tp_sym_slot *sym_find(const struct tp_symtab *st, uint64_t h,
				    const char *key, size_t len)
{
	size_t i = h & st->mask;

	for (;;) {
		struct tp_sym_slot *s = &st->slots[i];

		if (!s->hash)
			return s;
		if (s->hash == h && s->len == len &&
		    !memcmp(st->pool + s->key, key, len))
			return s;
		i = (i + 1) & st->mask;
	}
}

uint32_t tp_symtab_get(const struct tp_symtab *st, const char *key,
		       size_t len)
{
	const struct tp_sym_slot *s;

	if (!st->slots)
		return UINT32_MAX;
	s = sym_find(st, sym_hash(key, len), key, len);
	return s->hash ? s->val : UINT32_MAX;
}

static int sym_grow(struct tp_symtab *st)
{
	size_t n = (st->mask + 1) * 2;
	struct tp_sym_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i <= st->mask; i++) {
		struct tp_sym_slot *s = &st->slots[i];
		size_t j;

		if (!s->hash)
			continue;
		for (j = s->hash & (n - 1); slots[j].hash; j = (j + 1) & (n - 1))
			;
		slots[j] = *s;
	}
	free(st->slots);
	st->slots = slots;
	st->mask = n - 1;
	return 0;
}

int tp_symtab_put(struct tp_symtab *st, const char *key, size_t len,
		  uint32_t val)
{
	uint64_t h = sym_hash(key, len);
	struct tp_sym_slot *s;
	int rc;

	if (len > UINT32_MAX / 2 || st->pool_len + len + 1 > UINT32_MAX)
		return -ENOMEM;
	s = sym_find(st, h, key, len);
	if (s->hash) {
		s->val = val;
		return 0;
	}
	/* Keep the load under 1/2 so probes stay short. */
	if ((st->used + 1) * 2 > st->mask + 1) {
		rc = sym_grow(st);
		if (rc)
			return rc;
		s = sym_find(st, h, key, len);
	}
	if (st->pool_len + len + 1 > st->pool_cap) {
		size_t cap = st->pool_cap ? st->pool_cap * 2 : 4096;
		char *p;

		while (cap < st->pool_len + len + 1)
			cap *= 2;
		p = realloc(st->pool, cap);
		if (!p)
			return -ENOMEM;
		st->pool = p;
		st->pool_cap = cap;
	}
	memcpy(st->pool + st->pool_len, key, len);
	st->pool[st->pool_len + len] = '\0';
	s->hash = h;
	s->key = (uint32_t)st->pool_len;
	s->len = (uint32_t)len;
	s->val = val;
	st->pool_len += len + 1;
	st->used++;
	return 0;
}
