/* SPDX-License-Identifier: MIT */
/*
 * The configuration of one context: a struct with one field per key of
 * keys.def, filled from the ordered sources (defaults, /etc/tpager.conf,
 * $TPAGER_CONF, $TPAGER_OPTS, the opts string, tp_ctl_set).
 *
 * Layer exception: policy: it reads its options from the whole
 * configuration, every layer's keys included.
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

/*
 * Enum keys, in the order of their "values" string in keys.def. Those of
 * vmm.* are the vmm's own (vmm/vmm.h).
 */
enum tp_filter_kind {
	TP_FILTER_DELTA, TP_FILTER_LRU, TP_FILTER_GREEDY, TP_FILTER_DTR,
	TP_FILTER_MSPS, TP_FILTER_COOP, TP_FILTER_OVERLAP,
};
enum tp_director_kind {
	TP_DIRECTOR_DELTA, TP_DIRECTOR_DELTA_OVERLAP, TP_DIRECTOR_EVICT,
	TP_DIRECTOR_OFFLOAD,
};
enum tp_search_kind { TP_SEARCH_EXACT, TP_SEARCH_SAMPLE };
enum tp_costs_kind { TP_COSTS_MEASURED, TP_COSTS_MODEL };
enum tp_writeback_kind { TP_WRITEBACK_OFF, TP_WRITEBACK_ON, TP_WRITEBACK_AUTO };
enum tp_partial_kind { TP_PARTIAL_AUTO, TP_PARTIAL_ON, TP_PARTIAL_OFF };
enum tp_plan_kind { TP_PLAN_KIND_OFF, TP_PLAN_KIND_TSPLIT };
enum tp_tune_kind { TP_TUNE_KIND_OFF, TP_TUNE_KIND_AUTO, TP_TUNE_KIND_ON };

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

/** tp_conf_find() - the row for @key, or NULL. */
const struct tp_conf_key *tp_conf_find(const char *key);

/**
 * tp_conf_enum_name() - value @i of the enum key @key, spelled as the key
 * takes it, into @out: 0, or -EINVAL (no such key, or no value @i).
 */
int tp_conf_enum_name(const char *key, uint64_t i, char *out, size_t len);

/** tp_conf_defaults() - fill @c with the built-in defaults of keys.def. */
void tp_conf_defaults(struct tp_conf *c);

/**
 * tp_conf_set() - parse @value for @key into @c.
 * @source: where it came from (a file name, "TPAGER_OPTS", "tp_ctx_create",
 *          "tp_ctl_set"), named in the message sent to the log on error.
 * @line:   its line in @source, or 0.
 *
 * Return: 0; -ENOENT unknown key (the message suggests the nearest one);
 * -EPERM a read-only stats.* key; -EINVAL bad value. On error @c is
 * unchanged.
 */
int tp_conf_set(struct tp_conf *c, const char *key, const char *value,
		const char *source, unsigned line);

/**
 * tp_conf_apply_opts() - apply a "key=value,key=value" string.
 *
 * Every item is applied and every error logged. Return: 0 or the first
 * error of tp_conf_set(), -EINVAL for an item without '=', -ENOMEM.
 */
int tp_conf_apply_opts(struct tp_conf *c, const char *opts, const char *source);

/**
 * tp_conf_parse_text() - apply the text of a configuration file.
 * @text, @len: the file's bytes (need not be NUL-terminated).
 * @source:     the file name for messages.
 * @nerr:       if not NULL, set to the number of lines in error.
 *
 * "key = value" per line; blank lines and lines starting with # or ; are
 * skipped. Every line is applied and every error logged.
 * Return: 0 or the first error (-EINVAL, -ENOENT, -EPERM, -ENOMEM).
 */
int tp_conf_parse_text(struct tp_conf *c, const char *text, size_t len,
		       const char *source, unsigned *nerr);

/**
 * tp_conf_read_file() - read a whole configuration file (at most 1 MiB).
 * Return: 0 with *@text malloc'd (not NUL-terminated) and *@len set, or
 * -errno (-EFBIG when too large).
 */
int tp_conf_read_file(const char *path, char **text, size_t *len);

/**
 * tp_conf_load_file() - apply the file at @path to @c.
 * @optional: a missing file is not an error (the system file).
 *
 * Return: 0, -EINVAL when the file could not be read or holds errors (each
 * logged with its line), -ENOMEM.
 */
int tp_conf_load_file(struct tp_conf *c, const char *path, bool optional,
		      unsigned *nerr);

/**
 * tp_conf_system_path() - the system file: $TPAGER_SYSCONF if set, else
 * $(sysconfdir)/tpager.conf.
 */
const char *tp_conf_system_path(void);

/**
 * tp_conf_load() - fill @c from every source in order: defaults, the
 * system file, $TPAGER_CONF, $TPAGER_OPTS, then @opts.
 *
 * Every source is read and every error logged, then tp_conf_check() runs
 * and log.level is applied. Return: 0 or -EINVAL (-ENOMEM).
 */
int tp_conf_load(struct tp_conf *c, const char *opts);

/**
 * tp_conf_check() - constraints between keys (low under high watermark,
 * chunk size a power of two). Return: 0 or -EINVAL, each fault logged
 * with @source.
 */
int tp_conf_check(const struct tp_conf *c, const char *source);

/**
 * tp_conf_unknown() - log "unknown key" for @key with a suggestion,
 * prefixed by @source and @line unless @source is NULL.
 */
void tp_conf_unknown(const char *key, const char *source, unsigned line);

/**
 * tp_conf_suggest() - the known key (configuration or stats.*) nearest to
 * @key by edit distance, or NULL when none is near enough to be meant.
 */
const char *tp_conf_suggest(const char *key);

/**
 * tp_conf_parse_value() - parse @value as key @k's type into @field.
 * Return: 0, or -EINVAL with @field unchanged.
 */
int tp_conf_parse_value(const struct tp_conf_key *k, const char *value,
			void *field);

/**
 * tp_conf_format() - the value of @k in @c as text that parses back to
 * the same value. Return: 0 or -ENOSPC.
 */
int tp_conf_format(const struct tp_conf *c, const struct tp_conf_key *k,
		   char *buf, size_t len);

/** tp_conf_expect() - what @k accepts, in words, for messages. */
int tp_conf_expect(const struct tp_conf_key *k, char *buf, size_t len);

/** tp_conf_type_name() - "bool", "size", "size|percent", "enum", ... */
const char *tp_conf_type_name(enum tp_conf_type type);

/**
 * tp_conf_quote() - @s made safe for a one-line message: control bytes
 * and backslashes as \xNN, cut after 80 bytes.
 */
void tp_conf_quote(const char *s, char *buf, size_t len);

/** tp_parse_size() - a size with an optional K/M/G/T suffix (binary). */
int tp_parse_size(const char *s, uint64_t *out);

/** tp_format_size() - @v with the largest suffix that divides it exactly. */
int tp_format_size(uint64_t v, char *buf, size_t len);

/**
 * tp_parse_double() - a decimal number in the C locale, whatever the
 * process's: optional blanks around it, no hex, inf or nan.
 * Return: 0 with *@out set; -EINVAL otherwise (*@out unchanged).
 */
int tp_parse_double(const char *s, double *out);

/** tp_format_double() - @v in the C locale, shortest text that reads back. */
int tp_format_double(double v, char *buf, size_t len);

/** tp_psize_bytes() - resolve a size-or-percent against device memory. */
uint64_t tp_psize_bytes(const struct tp_psize *p, uint64_t device_bytes);

#endif /* TP_CTL_CONF_H */
