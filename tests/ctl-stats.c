/* SPDX-License-Identifier: MIT */
/*
 * tp_ctl on a real context (host backend): every stats.* key reads the
 * field of tp_stats_get() it names, the configuration reaches the layers
 * (the budget in bytes, the chunk size), and tp_ctx_create refuses a
 * configuration it does not understand with EINVAL and a message.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctl/stats.h"
#include "tap.h"
#include "ctl-log.h"

static uint64_t get_u64(struct tp_ctx *ctx, const char *key)
{
	char buf[32];

	if (tp_ctl_get(ctx, key, buf, sizeof(buf)))
		return UINT64_MAX;
	return strtoull(buf, NULL, 10);
}

int main(void)
{
	struct tp_tensor *t[3];
	struct tp_ctx *ctx;
	struct tp_stats st;
	unsigned char data[200000];
	unsigned bad = 0;
	char buf[64];

	plan_tests(14);
	unsetenv("TPAGER_CONF");
	unsetenv("TPAGER_OPTS");
	setenv("TPAGER_SYSCONF", "/nonexistent/tpager.conf", 1);

	ctl_log_reset();
	errno = 0;
	ctx = tp_ctx_create("vmm.backend=host,pager.budgt=1M");
	ok(!ctx && errno == EINVAL &&
	   ctl_log_has("tp_ctx_create: unknown key 'pager.budgt' (did you mean 'pager.budget'?)"),
	   "tp_ctx_create refuses a misspelt key: NULL, EINVAL, message '%s'",
	   ctl_log.text);
	setenv("TPAGER_OPTS", "policy.filter=fifo", 1);
	ctl_log_reset();
	errno = 0;
	ctx = tp_ctx_create("vmm.backend=host");
	ok(!ctx && errno == EINVAL &&
	   ctl_log_has("TPAGER_OPTS: policy.filter = 'fifo': expected one of"),
	   "tp_ctx_create refuses a bad TPAGER_OPTS: %s", ctl_log.text);
	unsetenv("TPAGER_OPTS");

	ctl_log_reset();
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=64K,pager.budget=8M,"
			    "vmm.device_memory=64M");
	if (!ctx)
		bail_out("tp_ctx_create: %s (%s)", strerror(errno), ctl_log.text);
	ok(get_u64(ctx, "stats.budget_bytes") == 8u << 20,
	   "pager.budget=8M: stats.budget_bytes is 8388608");
	ok(get_u64(ctx, "stats.chunk_size") == 64u << 10,
	   "vmm.chunk_size=64K: stats.chunk_size is 65536");

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 31 + 7);
	for (int i = 0; i < 3; i++) {
		t[i] = tp_tensor_create(ctx, sizeof(data), 0);
		if (!t[i] || tp_tensor_write(ctx, t[i], 0, data, sizeof(data)))
			bail_out("tensor %d: %s", i, strerror(errno));
	}
	tp_tensor_offload(ctx, t[0]);
	tp_sync(ctx);
	ok(get_u64(ctx, "stats.tensors_live") == 3, "stats.tensors_live is 3");

	/* Each key reads its own field: compare one by one, the context at
	 * rest after tp_sync. */
	if (tp_stats_get(ctx, &st))
		bail_out("tp_stats_get");
	for (size_t i = 0; i < tp_stat_nkeys; i++) {
		uint64_t want = tp_stat_value(&st, &tp_stat_keys[i]);
		uint64_t got = get_u64(ctx, tp_stat_keys[i].key);

		if (got != want) {
			diag("%s: tp_ctl_get %" PRIu64 ", tp_stats_get %" PRIu64,
			     tp_stat_keys[i].key, got, want);
			bad++;
		}
	}
	ok(bad == 0, "all %zu stats.* keys equal their tp_stats_get field",
	   tp_stat_nkeys);
	ok(st.phys_bytes > 0 && get_u64(ctx, "stats.phys_bytes") == st.phys_bytes,
	   "stats.phys_bytes = %" PRIu64 " after writes", st.phys_bytes);
	ok(get_u64(ctx, "stats.offloads") == st.offloads && st.offloads > 0,
	   "stats.offloads counts the offload (%" PRIu64 ")", st.offloads);

	ok(tp_ctl_set(ctx, "stats.phys_bytes", "0") == -EPERM,
	   "a statistic cannot be set");
	ok(tp_ctl_get(ctx, "stats.phys_bytes", buf, 2) == -ENOSPC,
	   "a statistic into a short buffer: -ENOSPC");
	ok(tp_ctl_set(ctx, "pager.budget", "16M") == -EPERM &&
	   get_u64(ctx, "stats.budget_bytes") == 8u << 20,
	   "pager.budget is start-only: -EPERM, budget unchanged");
	ok(tp_ctl_set(ctx, "policy.filter", "lru") == 0 &&
	   tp_ctl_get(ctx, "policy.filter", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "lru"), "a run key changes on a live context");
	ok(tp_ctl_get(ctx, "vmm.backend", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "host"), "vmm.backend reads host");

	/* The data survived it all. */
	{
		unsigned char back[sizeof(data)];

		ok(tp_tensor_read(ctx, t[0], 0, back, sizeof(back)) == 0 &&
		   !memcmp(back, data, sizeof(data)),
		   "the offloaded tensor reads back byte for byte");
	}
	for (int i = 0; i < 3; i++)
		tp_tensor_free(ctx, t[i]);
	tp_ctx_destroy(ctx);
	return exit_status();
}
