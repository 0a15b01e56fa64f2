/* SPDX-License-Identifier: MIT */
/* Typed values: every type parsed, range-checked, formatted and read back. */
#include "config.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/conf.h"
#include "tap.h"
#include "ctl-log.h"

static const struct tp_conf_key *key(const char *name)
{
	const struct tp_conf_key *k = tp_conf_find(name);

	if (!k)
		bail_out("key %s missing from keys.def", name);
	return k;
}

/* Set @name to @value in @c and return the formatted result in @out. */
static int set_get(struct tp_conf *c, const char *name, const char *value,
		   char *out, size_t len)
{
	int rc = tp_conf_set(c, name, value, "test", 0);

	if (rc)
		return rc;
	return tp_conf_format(c, key(name), out, len);
}

/* Bad @value for @name: -EINVAL, the field's bytes unchanged. */
static void refused(struct tp_conf *c, const char *name, const char *value)
{
	struct tp_conf before = *c;
	int rc;

	ctl_log_reset();
	rc = tp_conf_set(c, name, value, "test", 0);
	ok(rc == -EINVAL && !memcmp(&before, c, sizeof(before)) &&
	   ctl_log.errors == 1,
	   "%s = '%s' refused, configuration unchanged (rc %d)", name, value,
	   rc);
}

static void accepted(struct tp_conf *c, const char *name, const char *value,
		     const char *expect)
{
	char out[300];
	int rc = set_get(c, name, value, out, sizeof(out));

	ok(rc == 0 && !strcmp(out, expect), "%s = '%s' reads back '%s' (got '%s', rc %d)",
	   name, value, expect, rc ? "" : out, rc);
}

/*
 * Where no decimal-comma locale is installed, compile one into a temporary
 * directory with localedef(1) and point LOCPATH at it.
 */
static bool comma_locale(void)
{
	static char dir[] = "/tmp/tp-ctl-locale-XXXXXX";
	char cmd[512];
	bool ok;

	if (!mkdtemp(dir))
		return false;
	snprintf(cmd, sizeof(cmd),
		 "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1",
		 dir);
	ok = system(cmd) == 0 && setenv("LOCPATH", dir, 1) == 0 &&
	     setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		diag("could not remove %s", dir);
	if (ok)
		diag("decimal-comma locale compiled with localedef");
	return ok;
}

int main(void)
{
	struct tp_conf c;
	char buf[300], small[3];
	uint64_t u;
	char longval[400];

	plan_tests(76);
	ctl_log_reset();
	tp_conf_defaults(&c);
	ok(ctl_log.errors == 0, "every built-in default parses");

	/* BOOL */
	accepted(&c, "pager.range_cache", "0", "0");
	accepted(&c, "pager.range_cache", "yes", "1");
	accepted(&c, "pager.range_cache", "OFF", "0");
	accepted(&c, "pager.range_cache", "True", "1");
	refused(&c, "pager.range_cache", "2");
	refused(&c, "pager.range_cache", "enabled");
	refused(&c, "pager.range_cache", "");

	/* SIZE with suffixes and the [4K, 1G] range of vmm.chunk_size */
	accepted(&c, "vmm.chunk_size", "65536", "64K");
	accepted(&c, "vmm.chunk_size", "4M", "4M");
	accepted(&c, "vmm.chunk_size", "1g", "1G");
	accepted(&c, "vmm.chunk_size", "8KiB", "8K");
	accepted(&c, "vmm.chunk_size", "2MB", "2M");
	accepted(&c, "vmm.chunk_size", "5000", "5000");
	refused(&c, "vmm.chunk_size", "2G");
	refused(&c, "vmm.chunk_size", "4095");
	refused(&c, "vmm.chunk_size", "-4K");
	refused(&c, "vmm.chunk_size", "4Q");
	refused(&c, "vmm.chunk_size", "4 M B");
	refused(&c, "vmm.chunk_size", "50%");
	accepted(&c, "pager.host_budget", "3T", "3T");
	accepted(&c, "pager.host_budget", "18446744073709551615",
		 "18446744073709551615");
	refused(&c, "pager.host_budget", "18446744073709551616");
	refused(&c, "pager.host_budget", "16777216T");
	ok(tp_parse_size("16777215T", &u) == 0 && u == 16777215ULL << 40,
	   "16777215T is the largest T size");

	/* PSIZE: bytes or a percent in (0, 100] */
	accepted(&c, "pager.budget", "50%", "50%");
	accepted(&c, "pager.budget", "12.5 %", "12.5%");
	accepted(&c, "pager.budget", "6G", "6G");
	accepted(&c, "pager.budget", "100%", "100%");
	refused(&c, "pager.budget", "0%");
	refused(&c, "pager.budget", "101%");
	refused(&c, "pager.budget", "%");
	refused(&c, "pager.budget", "half");
	{
		struct tp_psize p = { .is_percent = true, .percent = 25 };
		struct tp_psize b = { .bytes = 123 };

		ok(tp_psize_bytes(&p, 4ULL << 30) == 1ULL << 30 &&
		   tp_psize_bytes(&b, 4ULL << 30) == 123,
		   "a percent resolves against device memory, bytes do not");
	}

	/* PERCENT */
	accepted(&c, "pager.high_watermark", "80", "80");
	accepted(&c, "pager.high_watermark", "90%", "90");
	accepted(&c, "pager.high_watermark", "0", "0");
	accepted(&c, "pager.high_watermark", "100", "100");
	refused(&c, "pager.high_watermark", "100.5");
	refused(&c, "pager.high_watermark", "-1");
	refused(&c, "pager.high_watermark", "nan");

	/* ENUM, case-insensitive, stored as the index */
	accepted(&c, "policy.filter", "dtr", "dtr");
	ok(c.policy_filter == TP_FILTER_DTR, "policy.filter=dtr is index %d",
	   TP_FILTER_DTR);
	accepted(&c, "policy.director", "Delta-Overlap", "delta-overlap");
	ok(c.policy_director == TP_DIRECTOR_DELTA_OVERLAP,
	   "policy.director=delta-overlap is its enum");
	refused(&c, "policy.filter", "delt");
	refused(&c, "policy.filter", "delta|lru");
	ok(ctl_log_has("expected one of delta, lru, greedy, dtr, msps, coop"),
	   "enum error lists the values: %s", ctl_log.text);

	/* INT with range */
	accepted(&c, "vmm.host.copy_threads", "16", "16");
	accepted(&c, "policy.remap_ns", "-1", "-1");
	refused(&c, "vmm.host.copy_threads", "17");
	refused(&c, "vmm.host.copy_threads", "0");
	refused(&c, "vmm.host.copy_threads", "2.5");
	refused(&c, "vmm.host.copy_threads", "0x4");
	refused(&c, "lineage.max_recompute_depth", "99999999999999999999");
	ok(ctl_log_has("expected an integer from 1 to 1000000000"),
	   "int error states the range: %s", ctl_log.text);

	/* DOUBLE */
	accepted(&c, "policy.link_utilisation", "0.5", "0.5");
	accepted(&c, "policy.link_bandwidth", "1e3", "1000");
	accepted(&c, "lineage.cost_alpha", "0.1", "0.1");
	ok(c.lineage_cost_alpha == 0.1, "0.1 is stored as the double 0.1");
	accepted(&c, "policy.link_bandwidth", "0.30000000000000004",
		 "0.30000000000000004");
	refused(&c, "policy.link_utilisation", "0");
	refused(&c, "policy.link_utilisation", "inf");
	refused(&c, "policy.link_bandwidth", "0x1p3");
	refused(&c, "policy.link_bandwidth", "12GB/s");

	/* STRING */
	accepted(&c, "stats.trace", "/tmp/t r.json", "/tmp/t r.json");
	accepted(&c, "stats.trace", "", "");
	memset(longval, 'a', sizeof(longval) - 1);
	longval[sizeof(longval) - 1] = 0;
	refused(&c, "stats.trace", longval);
	longval[TP_CONF_STRING_MAX - 1] = 0;
	accepted(&c, "stats.trace", longval, longval);

	/* formatting into a small buffer */
	ok(tp_conf_format(&c, key("policy.filter"), small, sizeof(small)) == -ENOSPC,
	   "format dtr into 3 bytes: -ENOSPC");
	ok(tp_conf_format(&c, key("pager.budget"), buf, 0) == -ENOSPC,
	   "format into 0 bytes: -ENOSPC");

	/* a decimal comma locale does not change what a file means */
	if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || comma_locale()) {
		ok(strtod("0,5", NULL) == 0.5,
		   "the process now reads 0,5 as one half");
		accepted(&c, "lineage.cost_alpha", "0.75", "0.75");
		refused(&c, "lineage.cost_alpha", "0,5");
		setlocale(LC_NUMERIC, "C");
	} else {
		skip(3, "no decimal-comma locale installed");
	}

	/* messages name the source, key, value and expectation, and keep
	 * control bytes out of the log line */
	ctl_log_reset();
	tp_conf_set(&c, "pager.budget", "1\x01G", "somefile", 7);
	ok(ctl_log_has("somefile:7: pager.budget = '1\\x01G': expected a size in bytes"),
	   "message: %s", ctl_log.text);
	ctl_log_reset();
	tp_conf_set(&c, "pager.budget", "2G # two", "f", 3);
	ok(ctl_log_has("(comments go on lines of their own)"),
	   "an inline comment is pointed out: %s", ctl_log.text);
	return exit_status();
}
