/* SPDX-License-Identifier: MIT */
/*
 * Configuration sources and the file format: defaults, the system file,
 * $TPAGER_CONF, $TPAGER_OPTS and the opts string, later ones winning;
 * every error named with its source, line, key, value and expectation.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/conf.h"
#include "base/log.h"
#include "tap.h"
#include "ctl-log.h"

static char dir[] = "/tmp/tp-ctl-sources-XXXXXX";

/* Write @len bytes of @text to a new file under dir; return its path. */
static const char *write_file_n(const char *name, const char *text,
				size_t len)
{
	static char paths[8][256];
	static unsigned next;
	char *p = paths[next++ % 8];
	FILE *f;

	snprintf(p, 256, "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (!f || fwrite(text, 1, len, f) != len || fclose(f))
		bail_out("cannot write %s", p);
	return p;
}

static const char *write_file(const char *name, const char *text)
{
	return write_file_n(name, text, strlen(text));
}

static void clear_env(void)
{
	char missing[300];

	snprintf(missing, sizeof(missing), "%s/no-such-system-file", dir);
	setenv("TPAGER_SYSCONF", missing, 1);
	unsetenv("TPAGER_CONF");
	unsetenv("TPAGER_OPTS");
}

static void fmt(const struct tp_conf *c, const char *key, char *buf)
{
	if (tp_conf_format(c, tp_conf_find(key), buf, 64))
		strcpy(buf, "?");
}

static void test_order(void)
{
	const char *sys, *user;
	struct tp_conf c, d;
	char b[64], h[64], f[64], t[64];

	clear_env();
	ctl_log_reset();
	tp_conf_defaults(&d);
	ok(tp_conf_load(&c, NULL) == 0 && !memcmp(&c, &d, sizeof(c)) &&
	   ctl_log.errors + ctl_log.warnings == 0,
	   "no files, no environment: the built-in defaults, silently");

	sys = write_file("system.conf",
			 "pager.budget = 10G\npager.high_watermark = 70\n"
			 "policy.filter = greedy\nvmm.chunk_size = 64K\n");
	setenv("TPAGER_SYSCONF", sys, 1);
	ok(tp_conf_load(&c, NULL) == 0, "system file alone loads");
	fmt(&c, "pager.budget", b);
	fmt(&c, "pager.high_watermark", h);
	ok(!strcmp(b, "10G") && !strcmp(h, "70"),
	   "system file over defaults: budget %s, high %s", b, h);

	user = write_file("user.conf", "pager.budget = 20G\n"
			  "policy.filter = lru\n");
	setenv("TPAGER_CONF", user, 1);
	ok(tp_conf_load(&c, NULL) == 0, "system and TPAGER_CONF load");
	fmt(&c, "pager.budget", b);
	fmt(&c, "pager.high_watermark", h);
	fmt(&c, "policy.filter", f);
	ok(!strcmp(b, "20G") && !strcmp(h, "70") && !strcmp(f, "lru"),
	   "TPAGER_CONF over the system file, which still sets the rest: %s %s %s",
	   b, h, f);

	setenv("TPAGER_OPTS", "pager.budget=30%, policy.filter = dtr", 1);
	ok(tp_conf_load(&c, NULL) == 0, "TPAGER_OPTS loads");
	fmt(&c, "pager.budget", b);
	fmt(&c, "policy.filter", f);
	ok(!strcmp(b, "30%") && !strcmp(f, "dtr"),
	   "TPAGER_OPTS over TPAGER_CONF: %s %s", b, f);

	ok(tp_conf_load(&c, "policy.filter=msps,stats.trace=/tmp/x.json,") == 0,
	   "opts load");
	fmt(&c, "pager.budget", b);
	fmt(&c, "policy.filter", f);
	fmt(&c, "stats.trace", t);
	fmt(&c, "vmm.chunk_size", h);
	ok(!strcmp(b, "30%") && !strcmp(f, "msps") &&
	   !strcmp(t, "/tmp/x.json") && !strcmp(h, "64K"),
	   "opts over TPAGER_OPTS, every earlier source still seen: %s %s %s %s",
	   b, f, t, h);

	setenv("TPAGER_CONF", "", 1);
	ok(tp_conf_load(&c, NULL) == 0 && c.policy_filter == TP_FILTER_DTR,
	   "an empty TPAGER_CONF is no file");
	clear_env();
}

static void test_format(void)
{
	static const char text[] =
		"\xef\xbb\xbf# a comment\r\n"
		"; another comment\n"
		"\n"
		"   \t\n"
		"  pager.budget\t=\t512M  \r\n"
		"policy.filter=lru\n"
		"policy.filter = dtr\n"
		"   # indented comment = not a key\n"
		"stats.trace =\n"
		"policy.director= offload";	/* no final newline */
	struct tp_conf c;
	unsigned nerr = 99;
	char b[64];

	tp_conf_defaults(&c);
	strcpy(c.stats_trace, "old");
	ctl_log_reset();
	ok(tp_conf_parse_text(&c, text, sizeof(text) - 1, "fmt.conf", &nerr) == 0 &&
	   nerr == 0 && ctl_log.errors == 0,
	   "BOM, comments, blanks, tabs, CRLF, no final newline: no error (%s)",
	   ctl_log.text);
	fmt(&c, "pager.budget", b);
	ok(!strcmp(b, "512M"), "whitespace around '=' ignored: %s", b);
	ok(c.policy_filter == TP_FILTER_DTR, "a key given twice: the later wins");
	ok(c.stats_trace[0] == 0, "an empty value sets an empty string");
	ok(c.policy_director == TP_DIRECTOR_OFFLOAD, "the last line counts without a newline");
}

static void test_errors(void)
{
	static const char text[] =
		"# line 1\n"
		"pager.budgt = 1G\n"			/* 2: typo */
		"vmm.chunk_size = 3X\n"			/* 3: bad size */
		"\n"
		"policy.filter\n"			/* 5: no '=' */
		"budget = 2G\n"				/* 6: bare component */
		"= 5\n"					/* 7: no key */
		"stats.evictions = 3\n"			/* 8: read-only */
		"completely.unrelated.thing = 1\n"	/* 9: no suggestion */
		"a\0b = 1\n"				/* 10: NUL byte */
		"policy.director = offload\n";		/* 11: fine */
	struct tp_conf c, before;
	unsigned nerr = 0;
	int rc;

	tp_conf_defaults(&c);
	before = c;
	ctl_log_reset();
	rc = tp_conf_parse_text(&c, text, sizeof(text) - 1, "bad.conf", &nerr);
	ok(rc != 0 && nerr == 8 && ctl_log.errors == 8,
	   "8 lines in error, all reported (rc %d, nerr %u, logged %u)", rc,
	   nerr, ctl_log.errors);
	ok(ctl_log_has("bad.conf:2: unknown key 'pager.budgt' (did you mean 'pager.budget'?)"),
	   "typo: nearest key suggested");
	ok(ctl_log_has("bad.conf:3: vmm.chunk_size = '3X': expected a size in bytes (suffix K, M, G or T) from 4K to 1G"),
	   "bad size: file, line, key, value, expectation");
	ok(ctl_log_has("bad.conf:5: 'policy.filter': expected key = value"),
	   "missing '='");
	ok(ctl_log_has("bad.conf:6: unknown key 'budget' (did you mean 'pager.budget'?)"),
	   "a bare last component suggests the full key");
	ok(ctl_log_has("bad.conf:7: no key before '='"), "missing key");
	ok(ctl_log_has("bad.conf:8: stats.evictions is a read-only statistic"),
	   "a statistic cannot be configured");
	ok(ctl_log_has("bad.conf:9: unknown key 'completely.unrelated.thing' (tpagerctl -a lists every key)"),
	   "nothing near: no guess");
	ok(ctl_log_has("bad.conf:10: line holds a NUL byte"), "NUL byte");
	ok(c.policy_director == TP_DIRECTOR_OFFLOAD,
	   "lines after errors are still applied");
	c.policy_director = before.policy_director;
	ok(!memcmp(&c, &before, sizeof(c)),
	   "lines in error change nothing");
	if (!ok(nerr == 8, "line count"))
		diag("%s", ctl_log.text);
}

static void test_load_errors(void)
{
	char path[300], big_name[] = "big.conf";
	const char *sys, *user;
	struct tp_conf c;
	char *big;
	int rc;

	clear_env();
	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	setenv("TPAGER_CONF", path, 1);
	ctl_log_reset();
	ok(tp_conf_load(&c, NULL) == -EINVAL &&
	   ctl_log_has("missing.conf: cannot read: No such file or directory"),
	   "a missing TPAGER_CONF file is an error: %s", ctl_log.text);

	setenv("TPAGER_CONF", dir, 1);
	ctl_log_reset();
	ok(tp_conf_load(&c, NULL) == -EINVAL &&
	   ctl_log_has("cannot read: Is a directory"),
	   "a directory as TPAGER_CONF is an error: %s", ctl_log.text);

	big = malloc((1u << 20) + 2);
	if (!big)
		bail_out("malloc");
	memset(big, '#', (1u << 20) + 1);
	big[(1u << 20) + 1] = 0;
	setenv("TPAGER_CONF", write_file_n(big_name, big, (1u << 20) + 1), 1);
	free(big);
	ctl_log_reset();
	ok(tp_conf_load(&c, NULL) == -EINVAL &&
	   ctl_log_has("big.conf: cannot read: larger than 1 MiB"),
	   "a file over 1 MiB is refused: %s", ctl_log.text);

	/* Every source is read even after an error. */
	clear_env();
	sys = write_file("sys-bad.conf", "pager.budget = lots\n");
	user = write_file("user-bad.conf", "policy.filter = best\n");
	setenv("TPAGER_SYSCONF", sys, 1);
	setenv("TPAGER_CONF", user, 1);
	setenv("TPAGER_OPTS", "policy.prefetch=maybe", 1);
	ctl_log_reset();
	rc = tp_conf_load(&c, "pager.high_watermark=200");
	ok(rc == -EINVAL && ctl_log.errors == 4, "four sources, four errors (rc %d, %u logged)",
	   rc, ctl_log.errors);
	ok(ctl_log_has("sys-bad.conf:1: pager.budget = 'lots'"), "system file named");
	ok(ctl_log_has("user-bad.conf:1: policy.filter = 'best'"), "TPAGER_CONF file named");
	ok(ctl_log_has("TPAGER_OPTS: policy.prefetch = 'maybe': expected a boolean"),
	   "TPAGER_OPTS named");
	ok(ctl_log_has("tp_ctx_create: pager.high_watermark = '200': expected a percent from 0 to 100"),
	   "the opts string named");

	clear_env();
	ctl_log_reset();
	ok(tp_conf_load(&c, "vmm.backend") == -EINVAL &&
	   ctl_log_has("tp_ctx_create: 'vmm.backend': expected key=value"),
	   "an opts item without '=': %s", ctl_log.text);
	ctl_log_reset();
	ok(tp_conf_load(&c, "pager.low_watermark=80,pager.high_watermark=70") == -EINVAL &&
	   ctl_log_has("pager.low_watermark (80) is above pager.high_watermark (70)"),
	   "low watermark above high: %s", ctl_log.text);
	ctl_log_reset();
	ok(tp_conf_load(&c, "vmm.chunk_size=12K") == -EINVAL &&
	   ctl_log_has("vmm.chunk_size = '12K': expected a power of two"),
	   "chunk size not a power of two: %s", ctl_log.text);
	ctl_log_reset();
	ok(tp_conf_load(&c, "pager.low_watermark=80,pager.high_watermark=90") == 0,
	   "the check sees the final values, not each step");
}

static void test_log_level(void)
{
	struct tp_conf c;

	clear_env();
	ok(tp_conf_load(&c, "log.level=error") == 0, "log.level=error loads");
	ctl_log_reset();
	tp_log(TP_LOG_WARN, "hidden");
	tp_log(TP_LOG_ERROR, "shown");
	ok(!ctl_log_has("hidden") && ctl_log_has("shown"),
	   "log.level applies to the log");
	ok(tp_conf_load(&c, "log.level=debug") == 0, "log.level=debug loads");
	ctl_log_reset();
	tp_log(TP_LOG_DEBUG, "verbose");
	ok(ctl_log_has("verbose"), "debug messages now delivered");
	tp_conf_load(&c, NULL);
}

int main(void)
{
	char cmd[400];

	plan_tests(43);
	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	test_order();
	test_format();
	test_errors();
	test_load_errors();
	test_log_level();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		diag("could not remove %s", dir);
	return exit_status();
}
