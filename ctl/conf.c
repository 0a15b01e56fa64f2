/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "ctx/log.h"

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
	for (size_t i = 0; i < tp_conf_nkeys; i++)
		if (strcmp(tp_conf_keys[i].key, key) == 0)
			return &tp_conf_keys[i];
	return NULL;
}

int tp_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (shift && (*end == 'B' || *end == 'b'))
		end++;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

uint64_t tp_psize_bytes(const struct tp_psize *p, uint64_t device_bytes)
{
	if (!p->is_percent)
		return p->bytes;
	return (uint64_t)((double)device_bytes * p->percent / 100.0);
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || !isfinite(*out))
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	return *end ? -EINVAL : 0;
}

static int parse_enum(const char *values, const char *s, int *out)
{
	size_t n = strlen(s);
	int idx = 0;

	for (const char *p = values; p && *p; idx++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && strncmp(p, s, n) == 0) {
			*out = idx;
			return 0;
		}
		p = bar ? bar + 1 : NULL;
	}
	return -EINVAL;
}

static const char *type_expect(const struct tp_conf_key *k)
{
	switch (k->type) {
	case TP_CONF_BOOL: return "a boolean (0/1, true/false, yes/no, on/off)";
	case TP_CONF_SIZE: return "a size in bytes with an optional K/M/G/T suffix";
	case TP_CONF_PSIZE: return "a size (K/M/G/T) or a percent of device memory";
	case TP_CONF_PERCENT: return "a percent from 0 to 100";
	case TP_CONF_ENUM: return "one of";
	case TP_CONF_INT: return "an integer";
	case TP_CONF_DOUBLE: return "a number";
	case TP_CONF_STRING: return "a string";
	}
	return "?";
}

static bool in_range(const struct tp_conf_key *k, double v)
{
	if (k->min == 0 && k->max == 0)
		return true;
	return v >= k->min && v <= k->max;
}

/* Parse @value for @k into @field; 0 or -EINVAL (field unchanged). */
static int parse_value(const struct tp_conf_key *k, const char *value,
		       void *field)
{
	double d;
	uint64_t u;
	int e;

	switch (k->type) {
	case TP_CONF_BOOL:
		if (!strcmp(value, "1") || !strcasecmp(value, "true") ||
		    !strcasecmp(value, "yes") || !strcasecmp(value, "on"))
			*(bool *)field = true;
		else if (!strcmp(value, "0") || !strcasecmp(value, "false") ||
			 !strcasecmp(value, "no") || !strcasecmp(value, "off"))
			*(bool *)field = false;
		else
			return -EINVAL;
		return 0;
	case TP_CONF_SIZE:
		if (tp_parse_size(value, &u) || !in_range(k, (double)u))
			return -EINVAL;
		*(uint64_t *)field = u;
		return 0;
	case TP_CONF_PSIZE: {
		struct tp_psize *p = field;
		size_t n = strlen(value);

		if (n && value[n - 1] == '%') {
			char tmp[64];

			if (n >= sizeof(tmp))
				return -EINVAL;
			memcpy(tmp, value, n - 1);
			tmp[n - 1] = 0;
			if (parse_double(tmp, &d) || d <= 0 || d > 100)
				return -EINVAL;
			p->is_percent = true;
			p->percent = d;
			p->bytes = 0;
			return 0;
		}
		if (tp_parse_size(value, &u))
			return -EINVAL;
		p->is_percent = false;
		p->bytes = u;
		p->percent = 0;
		return 0;
	}
	case TP_CONF_PERCENT: {
		char tmp[64];
		size_t n = strlen(value);

		if (n >= sizeof(tmp))
			return -EINVAL;
		memcpy(tmp, value, n + 1);
		if (n && tmp[n - 1] == '%')
			tmp[n - 1] = 0;
		if (parse_double(tmp, &d) || d < 0 || d > 100)
			return -EINVAL;
		*(double *)field = d;
		return 0;
	}
	case TP_CONF_ENUM:
		return parse_enum(k->values, value, (int *)field);
	case TP_CONF_INT: {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno || end == value || *end || !in_range(k, (double)v))
			return -EINVAL;
		*(int64_t *)field = v;
		return 0;
	}
	case TP_CONF_DOUBLE:
		if (parse_double(value, &d) || !in_range(k, d))
			return -EINVAL;
		*(double *)field = d;
		return 0;
	case TP_CONF_STRING:
		if (strlen(value) >= TP_CONF_STRING_MAX)
			return -EINVAL;
		strcpy(field, value);
		return 0;
	}
	e = -EINVAL;
	return e;
}

void tp_conf_defaults(struct tp_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];

		if (parse_value(k, k->def, (char *)c + k->offset))
			tp_log(TP_LOG_ERROR, "built-in default of %s is invalid",
			       k->key);
	}
}

int tp_conf_set(struct tp_conf *c, const char *key, const char *value,
		const char *source, unsigned line)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	char where[512];

	if (line)
		snprintf(where, sizeof(where), "%s:%u", source, line);
	else
		snprintf(where, sizeof(where), "%s", source);
	if (!k) {
		tp_log(TP_LOG_ERROR, "%s: unknown key '%s'", where, key);
		return -ENOENT;
	}
	if (parse_value(k, value, (char *)c + k->offset)) {
		if (k->type == TP_CONF_ENUM)
			tp_log(TP_LOG_ERROR, "%s: %s = '%s': expected one of %s",
			       where, key, value, k->values);
		else if (k->min != 0 || k->max != 0)
			tp_log(TP_LOG_ERROR, "%s: %s = '%s': expected %s in [%g, %g]",
			       where, key, value, type_expect(k), k->min, k->max);
		else
			tp_log(TP_LOG_ERROR, "%s: %s = '%s': expected %s",
			       where, key, value, type_expect(k));
		return -EINVAL;
	}
	return 0;
}

static void trim(char **s, char *end)
{
	while (**s && isspace((unsigned char)**s))
		(*s)++;
	while (end > *s && isspace((unsigned char)end[-1]))
		*--end = 0;
}

int tp_conf_apply_opts(struct tp_conf *c, const char *opts, const char *source)
{
	char *copy, *save = NULL, *item;
	int rc = 0;

	if (!opts || !*opts)
		return 0;
	copy = strdup(opts);
	if (!copy)
		return -ENOMEM;
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *key = item, *val;

		if (!eq) {
			trim(&key, key + strlen(key));
			if (!*key)
				continue;
			tp_log(TP_LOG_ERROR, "%s: '%s': expected key=value",
			       source, key);
			rc = -EINVAL;
			break;
		}
		*eq = 0;
		val = eq + 1;
		trim(&key, eq);
		trim(&val, val + strlen(val));
		rc = tp_conf_set(c, key, val, source, 0);
		if (rc)
			break;
	}
	free(copy);
	return rc;
}

int tp_conf_load(struct tp_conf *c, const char *opts)
{
	const char *env;
	int rc;

	tp_conf_defaults(c);
	env = getenv("TPAGER_OPTS");
	if (env) {
		rc = tp_conf_apply_opts(c, env, "TPAGER_OPTS");
		if (rc)
			return rc;
	}
	return tp_conf_apply_opts(c, opts, "tp_ctx_create");
}

int tp_conf_format(const struct tp_conf *c, const struct tp_conf_key *k,
		   char *buf, size_t len)
{
	const void *f = (const char *)c + k->offset;
	int n = 0;

	switch (k->type) {
	case TP_CONF_BOOL:
		n = snprintf(buf, len, "%d", *(const bool *)f ? 1 : 0);
		break;
	case TP_CONF_SIZE:
		n = snprintf(buf, len, "%llu",
			     (unsigned long long)*(const uint64_t *)f);
		break;
	case TP_CONF_PSIZE: {
		const struct tp_psize *p = f;

		if (p->is_percent)
			n = snprintf(buf, len, "%g%%", p->percent);
		else
			n = snprintf(buf, len, "%llu",
				     (unsigned long long)p->bytes);
		break;
	}
	case TP_CONF_PERCENT:
	case TP_CONF_DOUBLE:
		n = snprintf(buf, len, "%g", *(const double *)f);
		break;
	case TP_CONF_ENUM: {
		int idx = *(const int *)f;
		const char *p = k->values;

		while (idx-- > 0 && p)
			p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
		if (!p)
			return -EINVAL;
		n = snprintf(buf, len, "%.*s",
			     (int)(strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p)), p);
		break;
	}
	case TP_CONF_INT:
		n = snprintf(buf, len, "%lld", (long long)*(const int64_t *)f);
		break;
	case TP_CONF_STRING:
		n = snprintf(buf, len, "%s", (const char *)f);
		break;
	}
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
}
