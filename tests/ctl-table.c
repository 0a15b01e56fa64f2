/* SPDX-License-Identifier: MIT */
/*
 * The key tables themselves: names well formed and unique, defaults valid
 * and stable through format and parse, enums in the order of conf.h, and
 * the stats.* table covering every field of struct tp_stats.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "tpager.h"
#include "ctl/conf.h"
#include "ctl/stats.h"
#include "vmm/vmm.h"
#include "tap.h"
#include "ctl-log.h"

/* "layer.name[.name...]": lower case, digits and '_' between dots. */
static bool well_formed(const char *key)
{
	bool dot = false;

	if (!islower((unsigned char)key[0]))
		return false;
	for (const char *p = key; *p; p++) {
		if (*p == '.') {
			if (p[1] == 0 || p[1] == '.')
				return false;
			dot = true;
		} else if (!islower((unsigned char)*p) &&
			   !isdigit((unsigned char)*p) && *p != '_') {
			return false;
		}
	}
	return dot;
}

static int enum_index(const char *key, const char *name)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	int v = -1;

	if (!k || tp_conf_parse_value(k, name, &v))
		return -1;
	return v;
}

int main(void)
{
	unsigned bad_name = 0, dup = 0, bad_default = 0, bad_help = 0;
	unsigned bad_range = 0, bad_stat = 0;
	unsigned char covered[sizeof(struct tp_stats)];
	struct tp_conf a, b;

	plan_tests(12);
	ctl_log_reset();
	tp_conf_defaults(&a);
	ok(ctl_log.errors == 0, "every default parses: %s", ctl_log.text);

	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];
		char text[300];

		if (!well_formed(k->key))
			bad_name++, diag("malformed key %s", k->key);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(k->key, tp_conf_keys[j].key))
				dup++, diag("duplicate key %s", k->key);
		if (!k->help || !*k->help || strlen(k->help) > 100 ||
		    strchr(k->help, '\n'))
			bad_help++, diag("%s: help missing or over 100 bytes",
					 k->key);
		if (k->min > k->max || (k->type == TP_CONF_ENUM && !k->values))
			bad_range++, diag("%s: bad range or values", k->key);
		/* The default formats to a text that parses to the same bytes. */
		memcpy(&b, &a, sizeof(b));
		if (tp_conf_format(&a, k, text, sizeof(text)) ||
		    tp_conf_set(&b, k->key, text, "table", 0) ||
		    memcmp(&a, &b, sizeof(a)))
			bad_default++, diag("%s: default does not round-trip",
					    k->key);
		if (tp_stat_find(k->key))
			dup++, diag("%s is both a key and a statistic", k->key);
	}
	ok(bad_name == 0, "%zu keys, all well formed", tp_conf_nkeys);
	ok(dup == 0, "no key twice, none also a statistic");
	ok(bad_help == 0, "every key has one line of help");
	ok(bad_range == 0, "ranges ordered, enums have values");
	ok(bad_default == 0, "every default reads back as itself");

	ok(enum_index("vmm.backend", "sim") == TP_VMM_SIM &&
	   enum_index("vmm.backend", "cuda") == TP_VMM_CUDA &&
	   enum_index("vmm.mode", "contiguous") == TP_VMM_MODE_CONTIGUOUS,
	   "vmm enums in the order of conf.h");
	ok(enum_index("policy.filter", "coop") == TP_FILTER_COOP &&
	   enum_index("policy.filter", "msps") == TP_FILTER_MSPS &&
	   enum_index("policy.director", "offload") == TP_DIRECTOR_OFFLOAD &&
	   enum_index("policy.search", "sample") == TP_SEARCH_SAMPLE,
	   "policy enums in the order of conf.h");
	ok(enum_index("log.level", "debug") == TP_LOG_DEBUG &&
	   enum_index("log.level", "error") == TP_LOG_ERROR,
	   "log.level in the order of enum tp_log_level");

	/* stats.*: one uint64_t per field, every byte of the struct covered. */
	memset(covered, 0, sizeof(covered));
	for (size_t i = 0; i < tp_stat_nkeys; i++) {
		const struct tp_stat_key *s = &tp_stat_keys[i];

		if (!well_formed(s->key) || strncmp(s->key, "stats.", 6) ||
		    !s->help || !*s->help ||
		    s->offset + 8 > sizeof(struct tp_stats))
			bad_stat++, diag("bad stat row %s", s->key);
		else
			for (size_t j = 0; j < 8; j++)
				covered[s->offset + j]++;
		if (tp_stat_find(s->key) != s)
			bad_stat++, diag("%s not found or found twice", s->key);
	}
	ok(bad_stat == 0, "%zu stats keys, well formed", tp_stat_nkeys);
	{
		unsigned holes = 0, twice = 0;

		for (size_t j = 0; j < sizeof(covered); j++) {
			holes += covered[j] == 0;
			twice += covered[j] > 1;
		}
		ok(holes == 0 && twice == 0,
		   "stats.* covers struct tp_stats exactly (%zu bytes: %u uncovered, %u twice)",
		   sizeof(struct tp_stats), holes, twice);
	}
	ok(tp_stat_find("stats.trace") == NULL && tp_conf_find("stats.trace"),
	   "stats.trace is a configuration key, not a statistic");
	return exit_status();
}
