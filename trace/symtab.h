/* SPDX-License-Identifier: MIT */
/*
 * A string-keyed hash table (open addressing, linear probing) mapping
 * names to 32-bit values: tensor names of the parsers, interned op names.
 * Keys are copied into the table's own pool, so callers may pass slices
 * of a line buffer.
 */
#ifndef TP_TRACE_SYMTAB_H
#define TP_TRACE_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct tp_symtab {
	struct tp_sym_slot *slots;
	size_t mask;		/* slot count - 1 (a power of two) */
	size_t used;
	char *pool;		/* the keys, NUL-terminated one after another */
	size_t pool_len, pool_cap;
};

/** tp_symtab_init() - an empty table. Return: 0 or -ENOMEM. */
int tp_symtab_init(struct tp_symtab *st);

/** tp_symtab_fini() - free what @st holds. */
void tp_symtab_fini(struct tp_symtab *st);

/**
 * tp_symtab_get() - the value stored for @key (@len bytes), or UINT32_MAX
 * when the key is not in the table.
 */
uint32_t tp_symtab_get(const struct tp_symtab *st, const char *key,
		       size_t len);

/**
 * tp_symtab_put() - store @val for @key, replacing any value it had.
 *
 * Return: 0 or -ENOMEM (the table is unchanged).
 */
int tp_symtab_put(struct tp_symtab *st, const char *key, size_t len,
		  uint32_t val);

#endif /* TP_TRACE_SYMTAB_H */
