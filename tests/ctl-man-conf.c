/* SPDX-License-Identifier: MIT */
/*
 * tpager.conf(5) documents every key of ctl/keys.def and ctl/stats.def,
 * with the type, mode, default and accepted values of the table (and each
 * statistic with the meaning tpagerctl -a gives it), and no
 * key that the table does not have.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "ctl/stats.h"
#include "tap.h"

#define MAX_LINES 4096

static char *lines[MAX_LINES];
static size_t nlines;

/* Drop roff escapes that only change fonts; map \- \e \(aq to text. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == 'f' && s[2]) {
			s += 3;
		} else if (s[0] == '\\' && s[1] == '-') {
			*o++ = '-';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'e') {
			*o++ = '\\';
			s += 2;
		} else if (!strncmp(s, "\\(aq", 4)) {
			*o++ = '\'';
			s += 4;
		} else if (!strncmp(s, "\\&", 2)) {
			s += 2;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

static void load(const char *path)
{
	char buf[1024];
	FILE *f = fopen(path, "r");

	if (!f)
		bail_out("cannot open %s", path);
	while (nlines < MAX_LINES && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = 0;
		unescape(buf);
		lines[nlines] = strdup(buf);
		if (!lines[nlines])
			bail_out("strdup");
		nlines++;
	}
	fclose(f);
}

/* Index of the line ".B @key" after ".TP", or -1. */
static long entry(const char *key)
{
	char want[200];

	snprintf(want, sizeof(want), ".B %s", key);
	for (size_t i = 1; i < nlines; i++)
		if (!strcmp(lines[i], want) && !strcmp(lines[i - 1], ".TP"))
			return (long)i;
	return -1;
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	unsigned missing = 0, wrong = 0, stale = 0, smissing = 0, swrong = 0;
	char path[1024];
	struct tp_conf d;
	bool in_keys = false;

	plan_tests(5);
	snprintf(path, sizeof(path), "%s/man/tpager.conf.5", top ? top : ".");
	load(path);
	tp_conf_defaults(&d);

	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];
		char def[300], expect[300], head[700], acc[700];
		long at = entry(k->key);

		tp_conf_format(&d, k, def, sizeof(def));
		tp_conf_expect(k, expect, sizeof(expect));
		snprintf(head, sizeof(head), "%s, %s, default %s.",
			 tp_conf_type_name(k->type),
			 k->mode == TP_CONF_RUN ? "run" : "start",
			 *def ? def : "\"\"");
		snprintf(acc, sizeof(acc), "Accepts %s.", expect);
		if (at < 0 || (size_t)at + 2 >= nlines) {
			/* Say what to add (write '-' as \- in the page). */
			diag("%s is not documented in tpager.conf(5); add under KEYS:",
			     k->key);
			diag(".TP");
			diag(".B %s", k->key);
			diag("%s", head);
			diag("%s", acc);
			diag(".br");
			diag("%s.", k->help);
			missing++;
			continue;
		}
		if (strcmp(lines[at + 1], head) || strcmp(lines[at + 2], acc)) {
			diag("%s: page says '%s' / '%s'", k->key,
			     lines[at + 1], lines[at + 2]);
			diag("%s: table says '%s' / '%s'", k->key, head, acc);
			wrong++;
		}
	}
	ok(missing == 0, "all %zu keys documented", tp_conf_nkeys);
	ok(wrong == 0, "type, mode, default and accepted values as in keys.def");

	for (size_t i = 0; i < tp_stat_nkeys; i++) {
		const struct tp_stat_key *k = &tp_stat_keys[i];
		long at = entry(k->key);
		char text[400];

		if (at < 0 || (size_t)at + 1 >= nlines) {
			diag("%s is not documented", k->key);
			smissing++;
			continue;
		}
		/* What tpagerctl -a says, as a sentence. */
		snprintf(text, sizeof(text), "%c%s.", toupper((unsigned char)k->help[0]),
			 k->help + 1);
		if (strcmp(lines[at + 1], text)) {
			diag("%s: page says '%s', stats.def '%s'", k->key,
			     lines[at + 1], text);
			swrong++;
		}
	}
	ok(smissing == 0, "all %zu statistics documented", tp_stat_nkeys);
	ok(swrong == 0, "each statistic's meaning as stats.def (tpagerctl -a) says");

	/* Every entry of KEYS and STATISTICS names a key that exists. */
	for (size_t i = 1; i < nlines; i++) {
		if (!strncmp(lines[i], ".SH ", 4))
			in_keys = !strcmp(lines[i], ".SH KEYS") ||
				  !strcmp(lines[i], ".SH STATISTICS");
		if (in_keys && !strcmp(lines[i - 1], ".TP") &&
		    !strncmp(lines[i], ".B ", 3) &&
		    !tp_conf_find(lines[i] + 3) && !tp_stat_find(lines[i] + 3)) {
			diag("tpager.conf(5) documents '%s', which is no key",
			     lines[i] + 3);
			stale++;
		}
	}
	ok(stale == 0, "no documented key is missing from the tables");
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	return exit_status();
}
