/* SPDX-License-Identifier: MIT */
/*
 * A small strict JSON parser for one line holding one flat object whose
 * values are strings or arrays of strings and numbers: all that DTR logs
 * contain. Anything else (nesting, true/false/null, trailing commas,
 * duplicate keys, bad escapes, text after the object) is an error with a
 * reason, never a guess.
 *
 * Not json-c: for these flat lines it builds and frees a tree of objects
 * per line (on DTR's Transformer log, 97 MB/s against this reader's 750),
 * and even with JSON_TOKENER_STRICT it keeps the last of duplicate keys
 * and takes single-quoted strings, which this reader refuses with the
 * reason. It is fuzzed with the DTR importer (tests/fuzz/dtr-fuzz).
 */
#ifndef TP_TRACE_JSON_H
#define TP_TRACE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define TP_JSON_MAX_FIELDS 16

/* A string (decoded) or the text of a number, not NUL-terminated. */
struct tp_json_str {
	const char *s;
	size_t len;
};

struct tp_json_item {
	struct tp_json_str str;
	bool is_num;
};

struct tp_json_field {
	struct tp_json_str key;
	bool is_array;
	struct tp_json_str str;		/* !is_array */
	size_t first, n;		/* is_array: items[first .. first+n) */
};

/*
 * One parsed object. Reuse it line after line: its buffers grow to the
 * longest line and stay. Strings point into the line when they have no
 * escapes, else into the object's scratch buffer.
 */
struct tp_json_obj {
	struct tp_json_field f[TP_JSON_MAX_FIELDS];
	unsigned n;
	struct tp_json_item *items;
	size_t n_items, cap_items;
	char *scratch;
	size_t scratch_len, scratch_cap;
};

/** tp_json_fini() - free the buffers of @o. */
void tp_json_fini(struct tp_json_obj *o);

/**
 * tp_json_parse() - parse the object in @s (@len bytes, no newline).
 * @why: set to a static description of the first error
 *
 * Return: 0; -EINVAL malformed (*@why says why); -ENOMEM.
 */
int tp_json_parse(struct tp_json_obj *o, const char *s, size_t len,
		  const char **why);

/** tp_json_get() - the field named @key, or NULL. */
const struct tp_json_field *tp_json_get(const struct tp_json_obj *o,
					const char *key);

#endif /* TP_TRACE_JSON_H */
