/* SPDX-License-Identifier: MIT */
/*
 * Typed values of configuration keys: text to field and field to text.
 * Numbers are read and written in the "C" locale whatever the program
 * set with setlocale(), so a file means the same thing everywhere.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl/conf.h"

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
	/* On failure (ENOMEM) numbers follow the process locale. */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static locale_t get_c_locale(void)
{
	pthread_once(&c_locale_once, c_locale_init);
	return c_locale;
}

static double strtod_c(const char *s, char **end)
{
	locale_t loc = get_c_locale();

	return loc ? strtod_l(s, end, loc) : strtod(s, end);
}

/* snprintf of one double in the "C" locale. */
static int format_double(char *buf, size_t len, int prec, double v)
{
	locale_t loc = get_c_locale(), old = (locale_t)0;
	int n;

	if (loc)
		old = uselocale(loc);
	n = snprintf(buf, len, "%.*g", prec, v);
	if (loc)
		uselocale(old);
	return n;
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
	if (*end == 'B' || *end == 'b')
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

int tp_format_size(uint64_t v, char *buf, size_t len)
{
	static const char suffix[] = "KMGT";
	unsigned i = 0;
	int n;

	/* The largest binary unit that divides exactly, so it reads back. */
	while (v && i < 4 && (v & 1023) == 0) {
		v >>= 10;
		i++;
	}
	if (i)
		n = snprintf(buf, len, "%llu%c", (unsigned long long)v,
			     suffix[i - 1]);
	else
		n = snprintf(buf, len, "%llu", (unsigned long long)v);
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
}

uint64_t tp_psize_bytes(const struct tp_psize *p, uint64_t device_bytes)
{
	if (!p->is_percent)
		return p->bytes;
	return (uint64_t)((double)device_bytes * p->percent / 100.0);
}

int tp_parse_double(const char *s, double *out)
{
	char *end;
	double d;

	while (isspace((unsigned char)*s))
		s++;
	/* strtod also takes "inf", "nan" and hex floats; only decimals are
	 * numbers in a configuration file. */
	if (!isdigit((unsigned char)*s) && *s != '-' && *s != '+' && *s != '.')
		return -EINVAL;
	if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ||
	    ((s[0] == '-' || s[0] == '+') && s[1] == '0' &&
	     (s[2] == 'x' || s[2] == 'X')))
		return -EINVAL;
	errno = 0;
	d = strtod_c(s, &end);
	if (errno || end == s || !isfinite(d))
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	*out = d;
	return 0;
}

int tp_format_double(double v, char *buf, size_t len)
{
	char tmp[40];
	char *end;
	int n;

	/* The shortest of %.15g and %.17g that reads back as the same bits. */
	n = format_double(tmp, sizeof(tmp), 15, v);
	if (n > 0 && strtod_c(tmp, &end) != v)
		n = format_double(tmp, sizeof(tmp), 17, v);
	if (n < 0)
		return -EINVAL;
	n = snprintf(buf, len, "%s", tmp);
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
}

/* The @idx-th name of "a|b|c" as (pointer, length); false if none. */
static bool enum_name(const char *values, int idx, const char **name,
		      size_t *n)
{
	const char *p = values;

	if (!p || idx < 0)
		return false;
	while (idx-- > 0) {
		p = strchr(p, '|');
		if (!p)
			return false;
		p++;
	}
	*name = p;
	*n = strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p);
	return true;
}

int tp_conf_enum_name(const char *key, uint64_t i, char *out, size_t len)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	const char *name;
	size_t n;

	if (!k || k->type != TP_CONF_ENUM || i > INT_MAX ||
	    !enum_name(k->values, (int)i, &name, &n))
		return -EINVAL;
	snprintf(out, len, "%.*s", (int)n, name);
	return 0;
}

static int parse_enum(const char *values, const char *s, int *out)
{
	size_t n = strlen(s), len;
	const char *name;

	for (int idx = 0; enum_name(values, idx, &name, &len); idx++) {
		if (len == n && strncasecmp(name, s, n) == 0) {
			*out = idx;
			return 0;
		}
	}
	return -EINVAL;
}

static bool in_range(const struct tp_conf_key *k, double v)
{
	if (k->min == 0 && k->max == 0)
		return true;
	return v >= k->min && v <= k->max;
}

static int parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '-' && *s != '+')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A number followed by an optional '%'. */
static int parse_percent(const char *s, double *out)
{
	char tmp[64];
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (n && tmp[n - 1] == '%')
		tmp[n - 1] = 0;
	return tp_parse_double(tmp, out);
}

int tp_conf_parse_value(const struct tp_conf_key *k, const char *value,
			void *field)
{
	struct tp_psize ps;
	int64_t i;
	uint64_t u;
	double d;
	size_t n;

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
	case TP_CONF_PSIZE:
		n = strlen(value);
		while (n && isspace((unsigned char)value[n - 1]))
			n--;
		memset(&ps, 0, sizeof(ps));
		if (n && value[n - 1] == '%') {
			if (parse_percent(value, &d) || d <= 0 || d > 100)
				return -EINVAL;
			ps.is_percent = true;
			ps.percent = d;
		} else if (tp_parse_size(value, &ps.bytes)) {
			return -EINVAL;
		}
		*(struct tp_psize *)field = ps;
		return 0;
	case TP_CONF_PERCENT:
		if (parse_percent(value, &d) || d < 0 || d > 100 ||
		    !in_range(k, d))
			return -EINVAL;
		*(double *)field = d;
		return 0;
	case TP_CONF_ENUM:
		return parse_enum(k->values, value, (int *)field);
	case TP_CONF_INT:
		if (parse_int(value, &i) || !in_range(k, (double)i))
			return -EINVAL;
		*(int64_t *)field = i;
		return 0;
	case TP_CONF_DOUBLE:
		if (tp_parse_double(value, &d) || !in_range(k, d))
			return -EINVAL;
		*(double *)field = d;
		return 0;
	case TP_CONF_STRING:
		n = strlen(value);
		if (n >= TP_CONF_STRING_MAX)
			return -EINVAL;
		memcpy(field, value, n + 1);
		return 0;
	}
	return -EINVAL;
}

int tp_conf_format(const struct tp_conf *c, const struct tp_conf_key *k,
		   char *buf, size_t len)
{
	const void *f = (const char *)c + k->offset;
	const struct tp_psize *p;
	const char *name;
	size_t nlen;
	int n = 0, rc;

	if (!len)
		return -ENOSPC;
	switch (k->type) {
	case TP_CONF_BOOL:
		n = snprintf(buf, len, "%d", *(const bool *)f ? 1 : 0);
		break;
	case TP_CONF_SIZE:
		return tp_format_size(*(const uint64_t *)f, buf, len);
	case TP_CONF_PSIZE:
		p = f;
		if (!p->is_percent)
			return tp_format_size(p->bytes, buf, len);
		rc = tp_format_double(p->percent, buf, len);
		if (rc)
			return rc;
		n = (int)strlen(buf);
		if ((size_t)n + 1 >= len)
			return -ENOSPC;
		buf[n] = '%';
		buf[n + 1] = 0;
		return 0;
	case TP_CONF_PERCENT:
	case TP_CONF_DOUBLE:
		return tp_format_double(*(const double *)f, buf, len);
	case TP_CONF_ENUM:
		if (!enum_name(k->values, *(const int *)f, &name, &nlen))
			return -EINVAL;
		n = snprintf(buf, len, "%.*s", (int)nlen, name);
		break;
	case TP_CONF_INT:
		n = snprintf(buf, len, "%lld", (long long)*(const int64_t *)f);
		break;
	case TP_CONF_STRING:
		n = snprintf(buf, len, "%s", (const char *)f);
		break;
	}
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
}

int tp_conf_expect(const struct tp_conf_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	const char *name;
	size_t nlen, used;
	bool ranged = k->min != 0 || k->max != 0;
	int n = 0;

	switch (k->type) {
	case TP_CONF_BOOL:
		n = snprintf(buf, len, "a boolean (1/0, true/false, yes/no, on/off)");
		break;
	case TP_CONF_SIZE:
		if (ranged) {
			tp_format_size((uint64_t)k->min, lo, sizeof(lo));
			tp_format_size((uint64_t)k->max, hi, sizeof(hi));
			n = snprintf(buf, len,
				     "a size in bytes (suffix K, M, G or T) from %s to %s",
				     lo, hi);
		} else {
			n = snprintf(buf, len,
				     "a size in bytes (suffix K, M, G or T)");
		}
		break;
	case TP_CONF_PSIZE:
		n = snprintf(buf, len,
			     "a size in bytes (suffix K, M, G or T) or a percent of device memory above 0%% and at most 100%%");
		break;
	case TP_CONF_PERCENT:
		tp_format_double(ranged ? k->min : 0, lo, sizeof(lo));
		tp_format_double(ranged ? k->max : 100, hi, sizeof(hi));
		n = snprintf(buf, len, "a percent from %s to %s", lo, hi);
		break;
	case TP_CONF_ENUM:
		n = snprintf(buf, len, "one of ");
		used = n > 0 && (size_t)n < len ? (size_t)n : 0;
		for (int i = 0; enum_name(k->values, i, &name, &nlen); i++) {
			n = snprintf(buf + used, len - used, "%s%.*s",
				     i ? ", " : "", (int)nlen, name);
			if (n < 0 || (size_t)n >= len - used)
				return -ENOSPC;
			used += (size_t)n;
		}
		return 0;
	case TP_CONF_INT:
		if (ranged)
			n = snprintf(buf, len, "an integer from %.0f to %.0f",
				     k->min, k->max);
		else
			n = snprintf(buf, len, "an integer");
		break;
	case TP_CONF_DOUBLE:
		if (ranged) {
			tp_format_double(k->min, lo, sizeof(lo));
			tp_format_double(k->max, hi, sizeof(hi));
			n = snprintf(buf, len, "a number from %s to %s", lo, hi);
		} else {
			n = snprintf(buf, len, "a number");
		}
		break;
	case TP_CONF_STRING:
		n = snprintf(buf, len, "a string of at most %d bytes",
			     TP_CONF_STRING_MAX - 1);
		break;
	}
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
}

const char *tp_conf_type_name(enum tp_conf_type type)
{
	switch (type) {
	case TP_CONF_BOOL: return "bool";
	case TP_CONF_SIZE: return "size";
	case TP_CONF_PSIZE: return "size|percent";
	case TP_CONF_PERCENT: return "percent";
	case TP_CONF_ENUM: return "enum";
	case TP_CONF_INT: return "int";
	case TP_CONF_DOUBLE: return "double";
	case TP_CONF_STRING: return "string";
	}
	return "?";
}

void tp_conf_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	/* Values come from files and the environment: show control bytes
	 * escaped and cut very long ones, so a message stays one line. */
	if (!len)
		return;
	for (; *s && o + 5 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if (o >= 80) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o] = 0;
}
