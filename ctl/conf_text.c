/* SPDX-License-Identifier: MIT */
/*
 * The two textual forms of a configuration: the file ("key = value" per
 * line, as sysctl.conf(5)) and the opts string ("key=value,key=value").
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "base/log.h"

/* Trim [*s, end) in place: skip leading blanks, cut trailing ones. */
static void trim(char **s, char *end)
{
	while (*s < end && isspace((unsigned char)**s))
		(*s)++;
	while (end > *s && isspace((unsigned char)end[-1]))
		end--;
	*end = 0;
}

/*
 * One "key = value" assignment, @item NUL-terminated and writable.
 * Return: 0, or -EINVAL/-ENOENT/-EPERM after logging why.
 */
static int apply_item(struct tp_conf *c, char *item, const char *source,
		      unsigned line, const char *form)
{
	char *eq = strchr(item, '='), *key = item, *val;
	char qitem[128];

	if (!eq) {
		trim(&key, key + strlen(key));
		tp_conf_quote(key, qitem, sizeof(qitem));
		if (line)
			tp_log(TP_LOG_ERROR, "%s:%u: '%s': expected %s",
			       source, line, qitem, form);
		else
			tp_log(TP_LOG_ERROR, "%s: '%s': expected %s", source,
			       qitem, form);
		return -EINVAL;
	}
	val = eq + 1;
	trim(&key, eq);
	trim(&val, val + strlen(val));
	if (!*key) {
		if (line)
			tp_log(TP_LOG_ERROR, "%s:%u: no key before '='",
			       source, line);
		else
			tp_log(TP_LOG_ERROR, "%s: no key before '='", source);
		return -EINVAL;
	}
	return tp_conf_set(c, key, val, source, line);
}

int tp_conf_apply_opts(struct tp_conf *c, const char *opts, const char *source)
{
	char *copy, *item, *next;
	int rc = 0, err;

	if (!opts || !*opts)
		return 0;
	copy = strdup(opts);
	if (!copy)
		return -ENOMEM;
	for (item = copy; item; item = next) {
		char *p = item;

		next = strchr(item, ',');
		if (next)
			*next++ = 0;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			continue;	/* "a=1,,b=2" and a trailing comma */
		/* Every item is tried, so that one run reports every error. */
		err = apply_item(c, item, source, 0, "key=value");
		if (err && !rc)
			rc = err;
	}
	free(copy);
	return rc;
}

int tp_conf_parse_text(struct tp_conf *c, const char *text, size_t len,
		       const char *source, unsigned *nerr)
{
	const char *p = text, *end = text + len;
	unsigned line = 0, errors = 0;
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0, err;

	/* A UTF-8 byte order mark, as some editors write one. */
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		p += 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *s;

		line++;
		if (n + 1 > cap) {
			char *nb = realloc(buf, n + 1);

			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap = n + 1;
		}
		memcpy(buf, p, n);
		buf[n] = 0;
		p = nl ? nl + 1 : end;

		s = buf;
		while (isspace((unsigned char)*s))
			s++;
		if (strlen(buf) != n) {
			tp_log(TP_LOG_ERROR, "%s:%u: line holds a NUL byte",
			       source, line);
			err = -EINVAL;
		} else if (!*s || *s == '#' || *s == ';') {
			continue;
		} else {
			err = apply_item(c, s, source, line, "key = value");
		}
		if (err) {
			errors++;
			if (!rc)
				rc = err;
		}
	}
	free(buf);
	if (nerr)
		*nerr = errors;
	return rc;
}
