/* SPDX-License-Identifier: MIT */
/*
 * The configuration of one context: a struct with one field per key of
 * keys.def, filled from the ordered sources (defaults, /etc/tpager.conf,
 * $TPAGER_CONF, $TPAGER_OPTS, the opts string, tp_ctl_set).
 */
#ifndef TP_CTL_CONF_H
#define TP_CTL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tp_conf_type {
	TP_CONF_BOOL,
	TP_CONF_SIZE,
	TP_CONF_PSIZE,
	TP_CONF_PERCENT,
	TP_CONF_ENUM,
	TP_CONF_INT,
	TP_CONF_DOUBLE,
	TP_CONF_STRING,
};

enum tp_conf_mode {
	TP_CONF_START,	/* read when a context is created */
	TP_CONF_RUN,	/* tp_ctl_set() may change it */
};

/* A size that may instead be a percent of device memory. */
struct tp_psize {
	uint64_t bytes;
	double percent;
	bool is_percent;
};

#define TP_CONF_STRING_MAX 256

/* Enum keys, in the order of their "values" string in keys.def. */
enum tp_vmm_backend_kind { TP_VMM_AUTO, TP_VMM_CUDA, TP_VMM_HOST, TP_VMM_SIM };
enum tp_vmm_mode { TP_VMM_MODE_CHUNKED, TP_VMM_MODE_CONTIGUOUS };
enum tp_filter_kind {
	TP_FILTER_DELTA, TP_FILTER_LRU, TP_FILTER_GREEDY, TP_FILTER_DTR,
	TP_FILTER_MSPS, TP_FILTER_COOP,
};
enum tp_director_kind {
	TP_DIRECTOR_DELTA, TP_DIRECTOR_DELTA_OVERLAP, TP_DIRECTOR_EVICT,
	TP_DIRECTOR_OFFLOAD,
};
enum tp_search_kind { TP_SEARCH_EXACT, TP_SEARCH_SAMPLE };

#define TP_CONF_CTYPE_BOOL	bool
#define TP_CONF_CTYPE_SIZE	uint64_t
#define TP_CONF_CTYPE_PSIZE	struct tp_psize
#define TP_CONF_CTYPE_PERCENT	double
#define TP_CONF_CTYPE_ENUM	int
#define TP_CONF_CTYPE_INT	int64_t
#define TP_CONF_CTYPE_DOUBLE	double
#define TP_CONF_CTYPE_STRING	char

#define TP_CONF_ARRAY_BOOL
#define TP_CONF_ARRAY_SIZE
#define TP_CONF_ARRAY_PSIZE
#define TP_CONF_ARRAY_PERCENT
#define TP_CONF_ARRAY_ENUM
#define TP_CONF_ARRAY_INT
#define TP_CONF_ARRAY_DOUBLE
#define TP_CONF_ARRAY_STRING	[TP_CONF_STRING_MAX]

struct tp_conf {
#define TP_KEY(key, field, type, def, min, max, values, mode, help) \
	TP_CONF_CTYPE_##type field TP_CONF_ARRAY_##type;
#include "ctl/keys.def"
#undef TP_KEY
};

/* One row of the key table. */
struct tp_conf_key {
	const char *key;
	size_t offset;			/* of the field in struct tp_conf */
	enum tp_conf_type type;
	const char *def;
	double min, max;		/* SIZE, INT, DOUBLE, PERCENT; 0,0: none */
	const char *values;		/* ENUM: "a|b|c" */
	enum tp_conf_mode mode;
	const char *help;
};

extern const struct tp_conf_key tp_conf_keys[];
extern const size_t tp_conf_nkeys;

/* The row for @key, or NULL. */
const struct tp_conf_key *tp_conf_find(const char *key);

/* Fill @c with the built-in defaults. */
void tp_conf_defaults(struct tp_conf *c);

/*
 * Parse @value for @key into @c. @source names where it came from (a file
 * name, "TPAGER_OPTS", "tp_ctx_create", "tp_ctl_set") and @line its line
 * (0: none), for the error message sent to the log. On error @c is
 * unchanged. Return: 0, -ENOENT unknown key, -EINVAL bad value.
 */
int tp_conf_set(struct tp_conf *c, const char *key, const char *value,
		const char *source, unsigned line);

/* Apply a "key=value,key=value" string; stops at the first error. */
int tp_conf_apply_opts(struct tp_conf *c, const char *opts, const char *source);

/*
 * Fill @c from every source in order: defaults, /etc/tpager.conf,
 * $TPAGER_CONF, $TPAGER_OPTS, then @opts. Return 0 or the first error.
 */
int tp_conf_load(struct tp_conf *c, const char *opts);

/* Format the value of @k in @c as text. Return 0 or -ENOSPC. */
int tp_conf_format(const struct tp_conf *c, const struct tp_conf_key *k,
		   char *buf, size_t len);

/* Parse a size with an optional K/M/G/T suffix (binary units). */
int tp_parse_size(const char *s, uint64_t *out);

/* Resolve a size-or-percent against the device's memory. */
uint64_t tp_psize_bytes(const struct tp_psize *p, uint64_t device_bytes);

#endif /* TP_CTL_CONF_H */
