/* SPDX-License-Identifier: MIT */
/*
 * tp_ctl_get() and tp_ctl_set() on the configuration of a context: every
 * key readable, RUN keys changeable, START keys and statistics refused, a
 * refused value leaving the context as it was. The context here holds only
 * its configuration (no backend): these calls touch nothing else.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/ctx.h"
#include "base/log.h"
#include "ctl/conf.h"
#include "ctl/stats.h"
#include "tap.h"
#include "ctl-log.h"

static struct tp_ctx ctx;

/* tp_ctl_set() refused with @want, and nothing in the context moved. */
static void refused(const char *key, const char *value, int want,
		    const char *msg)
{
	struct tp_conf before = ctx.conf;
	int rc;

	ctl_log_reset();
	rc = tp_ctl_set(&ctx, key, value);
	ok(rc == want && !memcmp(&before, &ctx.conf, sizeof(before)) &&
	   ctl_log_has(msg),
	   "set %s=%s: %d (want %d), unchanged, message '%s'", key, value,
	   rc, want, ctl_log.text);
}

static void every_key_reads_its_default(void)
{
	struct tp_conf d;
	char got[300], want[300];
	unsigned bad = 0;

	tp_conf_defaults(&d);
	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];

		if (tp_ctl_get(&ctx, k->key, got, sizeof(got)) ||
		    tp_conf_format(&d, k, want, sizeof(want)) ||
		    strcmp(got, want)) {
			diag("%s: got '%s', want '%s'", k->key, got, want);
			bad++;
		}
	}
	ok(bad == 0, "all %zu keys read back their defaults", tp_conf_nkeys);
}

/* Every RUN key takes a new value and reads it back; START keys refuse. */
static void every_run_key_is_settable(void)
{
	unsigned run = 0, start = 0, bad = 0;
	char before[300], after[300];

	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];
		int rc;

		tp_ctl_get(&ctx, k->key, before, sizeof(before));
		/* Writing the current value back is valid for every type. */
		ctl_log_reset();
		rc = tp_ctl_set(&ctx, k->key, before);
		tp_ctl_get(&ctx, k->key, after, sizeof(after));
		if (k->mode == TP_CONF_RUN) {
			run++;
			if (rc || strcmp(before, after))
				bad++, diag("%s: rc %d", k->key, rc);
		} else {
			start++;
			if (rc != -EPERM || !ctl_log_has("is read when a context is created"))
				bad++, diag("%s: START key gave %d", k->key, rc);
		}
	}
	ok(bad == 0 && run > 0 && start > 0,
	   "%u RUN keys settable, %u START keys refused with -EPERM", run, start);
}

int main(void)
{
	char buf[64];
	int rc;

	plan_tests(27);
	unsetenv("TPAGER_CONF");
	unsetenv("TPAGER_OPTS");
	setenv("TPAGER_SYSCONF", "/nonexistent/tpager.conf", 1);
	if (tp_conf_load(&ctx.conf, NULL))
		bail_out("defaults do not load");

	every_key_reads_its_default();
	every_run_key_is_settable();

	ok_rc(tp_ctl_set(&ctx, "policy.filter", "lru"), "set policy.filter=lru");
	ok(ctx.conf.policy_filter == TP_FILTER_LRU, "ctx->conf.policy_filter is lru");
	ok(tp_ctl_get(&ctx, "policy.filter", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "lru"), "get policy.filter: %s", buf);
	ok_rc(tp_ctl_set(&ctx, "pager.range_cache_max", "128M"),
	      "set a size-or-percent RUN key");
	ok(!ctx.conf.pager_range_cache_max.is_percent &&
	   ctx.conf.pager_range_cache_max.bytes == 128u << 20,
	   "pager.range_cache_max is 128 MiB");
	ok_rc(tp_ctl_set(&ctx, "policy.link_bandwidth", "24.5"), "set a double");
	ok(ctx.conf.policy_link_bandwidth == 24.5, "policy.link_bandwidth is 24.5");

	refused("pager.budget", "50%", -EPERM,
		"tp_ctl_set: pager.budget is read when a context is created");
	refused("vmm.backend", "sim", -EPERM, "vmm.backend is read when");
	refused("stats.evictions", "0", -EPERM,
		"tp_ctl_set: stats.evictions is a read-only statistic");
	refused("policy.filtre", "lru", -ENOENT,
		"tp_ctl_set: unknown key 'policy.filtre' (did you mean 'policy.filter'?)");
	refused("policy.filter", "random", -EINVAL,
		"tp_ctl_set: policy.filter = 'random': expected one of delta, lru");
	refused("policy.prefetch.depth", "1000", -EINVAL,
		"expected an integer from 1 to 256");
	refused("pager.high_watermark", "50", -EINVAL,
		"tp_ctl_set: pager.low_watermark (65) is above pager.high_watermark (50)");
	ok_rc(tp_ctl_set(&ctx, "pager.low_watermark", "40"), "low watermark 40");
	ok_rc(tp_ctl_set(&ctx, "pager.high_watermark", "50"),
	      "then high watermark 50 is allowed");

	/* log.level takes effect at once */
	ok_rc(tp_ctl_set(&ctx, "log.level", "info"), "set log.level=info");
	ctl_log_reset();
	tp_log(TP_LOG_INFO, "info shown");
	tp_log(TP_LOG_DEBUG, "debug hidden");
	ok(ctl_log_has("info shown") && !ctl_log_has("debug hidden"),
	   "log.level=info delivers info, not debug");
	tp_ctl_set(&ctx, "log.level", "warn");

	/* argument errors */
	ok(tp_ctl_get(&ctx, "no.such.key", buf, sizeof(buf)) == -ENOENT,
	   "get unknown key: -ENOENT");
	ok(tp_ctl_get(&ctx, "policy.filter", buf, 3) == -ENOSPC && buf[0] == 0,
	   "get into a short buffer: -ENOSPC, empty string");
	ok(tp_ctl_get(&ctx, "policy.filter", buf, 0) == -ENOSPC,
	   "get into 0 bytes: -ENOSPC");
	ok(tp_ctl_get(NULL, "policy.filter", buf, sizeof(buf)) == -EINVAL &&
	   tp_ctl_get(&ctx, NULL, buf, sizeof(buf)) == -EINVAL &&
	   tp_ctl_get(&ctx, "policy.filter", NULL, 8) == -EINVAL,
	   "get with a NULL argument: -EINVAL");
	rc = tp_ctl_set(NULL, "policy.filter", "lru");
	ok(rc == -EINVAL && tp_ctl_set(&ctx, NULL, "x") == -EINVAL &&
	   tp_ctl_set(&ctx, "policy.filter", NULL) == -EINVAL,
	   "set with a NULL argument: -EINVAL");
	ok(tp_ctl_set(&ctx, "", "1") == -ENOENT, "set the empty key: -ENOENT");
	ok(tp_conf_suggest("stats.evictons") &&
	   !strcmp(tp_conf_suggest("stats.evictons"), "stats.evictions"),
	   "suggestions cover the stats.* keys");
	return exit_status();
}
