/* SPDX-License-Identifier: MIT */
/* The key table, built-in defaults, and setting one key with a message. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl/conf.h"
#include "ctl/stats.h"
#include "base/log.h"

const struct tp_conf_key tp_conf_keys[] = {
#define TP_KEY(key, field, type, def, min, max, values, mode, help) \
	{ key, offsetof(struct tp_conf, field), TP_CONF_##type, def, \
	  (double)(min), (double)(max), values, TP_CONF_##mode, help },
#include "ctl/keys.def"
#undef TP_KEY
};

const size_t tp_conf_nkeys = sizeof(tp_conf_keys) / sizeof(tp_conf_keys[0]);

const struct tp_conf_key *tp_conf_find(const char *key)
{
	if (!key)
		return NULL;
	for (size_t i = 0; i < tp_conf_nkeys; i++)
		if (strcmp(tp_conf_keys[i].key, key) == 0)
			return &tp_conf_keys[i];
	return NULL;
}

void tp_conf_defaults(struct tp_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];

		/* tests/ctl-table checks that every default parses. */
		if (tp_conf_parse_value(k, k->def, (char *)c + k->offset))
			tp_log(TP_LOG_ERROR, "built-in default of %s is invalid",
			       k->key);
	}
}

static void format_where(char *where, size_t len, const char *source,
			 unsigned line)
{
	if (line)
		snprintf(where, len, "%s:%u", source, line);
	else
		snprintf(where, len, "%s", source);
}

void tp_conf_unknown(const char *key, const char *source, unsigned line)
{
	char where[512], qkey[128];
	const char *near = tp_conf_suggest(key);

	/* No source: the caller's own message already says where. */
	if (source)
		format_where(where, sizeof(where) - 2, source, line);
	else
		where[0] = 0;
	strcat(where, source ? ": " : "");
	tp_conf_quote(key, qkey, sizeof(qkey));
	if (near)
		tp_log(TP_LOG_ERROR, "%sunknown key '%s' (did you mean '%s'?)",
		       where, qkey, near);
	else
		tp_log(TP_LOG_ERROR, "%sunknown key '%s' (tpagerctl -a lists every key)",
		       where, qkey);
}

int tp_conf_set(struct tp_conf *c, const char *key, const char *value,
		const char *source, unsigned line)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	char where[512], qval[128], expect[256];

	format_where(where, sizeof(where), source, line);
	if (!k) {
		if (tp_stat_find(key)) {
			tp_log(TP_LOG_ERROR, "%s: %s is a read-only statistic",
			       where, key);
			return -EPERM;
		}
		tp_conf_unknown(key, source, line);
		return -ENOENT;
	}
	if (tp_conf_parse_value(k, value, (char *)c + k->offset) == 0)
		return 0;
	tp_conf_quote(value, qval, sizeof(qval));
	if (tp_conf_expect(k, expect, sizeof(expect)))
		snprintf(expect, sizeof(expect), "a %s",
			 tp_conf_type_name(k->type));
	tp_log(TP_LOG_ERROR, "%s: %s = '%s': expected %s%s", where, key, qval,
	       expect, strchr(value, '#') ?
	       " (comments go on lines of their own)" : "");
	return -EINVAL;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int tp_conf_check(const struct tp_conf *c, const char *source)
{
	char lo[32], hi[32];
	int rc = 0;

	if (c->pager_low_watermark > c->pager_high_watermark) {
		tp_format_double(c->pager_low_watermark, lo, sizeof(lo));
		tp_format_double(c->pager_high_watermark, hi, sizeof(hi));
		tp_log(TP_LOG_ERROR,
		       "%s: pager.low_watermark (%s) is above pager.high_watermark (%s)",
		       source, lo, hi);
		rc = -EINVAL;
	}
	/* Chunks are mapped at chunk-aligned addresses and the host backend
	 * maps them with mmap: a power of two keeps both true. */
	if (!is_pow2(c->vmm_chunk_size)) {
		tp_format_size(c->vmm_chunk_size, lo, sizeof(lo));
		tp_log(TP_LOG_ERROR,
		       "%s: vmm.chunk_size = '%s': expected a power of two",
		       source, lo);
		rc = -EINVAL;
	}
	return rc;
}
