/* SPDX-License-Identifier: MIT */
/* tp_ctl_get() and tp_ctl_set(): every key of a live context by name. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctx/ctx.h"
#include "lineage/lineage.h"
#include "pager/pager.h"
#include "vmm/vmm.h"
#include "base/log.h"
#include "ctl/conf.h"
#include "ctl/stats.h"

TP_API int tp_ctl_get(struct tp_ctx *ctx, const char *key, char *buf,
		      size_t len)
{
	const struct tp_conf_key *k;
	const struct tp_stat_key *s;
	struct tp_stats st;
	int rc, n;

	if (!ctx || !key || !buf)
		return -EINVAL;
	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	k = tp_conf_find(key);
	if (k) {
		rc = tp_conf_format(&ctx->conf, k, buf, len);
		goto out;
	}
	s = tp_stat_find(key);
	if (!s)
		return -ENOENT;
	rc = tp_stats_get(ctx, &st);
	if (rc)
		return rc;
	n = snprintf(buf, len, "%" PRIu64, tp_stat_value(&st, s));
	rc = (n < 0 || (size_t)n >= len) ? -ENOSPC : 0;
out:
	if (rc)
		buf[0] = 0;
	return rc;
}

/*
 * Store one field of @from into the live @to. Layer threads read RUN keys
 * without a lock; a scalar is stored in one access so that they see the old
 * or the new value, never a mix.
 */
static void commit_field(struct tp_conf *to, const struct tp_conf *from,
			 const struct tp_conf_key *k)
{
	void *dst = (char *)to + k->offset;
	const void *src = (const char *)from + k->offset;

	switch (k->type) {
	case TP_CONF_BOOL:
		__atomic_store_n((bool *)dst, *(const bool *)src,
				 __ATOMIC_RELEASE);
		break;
	case TP_CONF_ENUM:
		__atomic_store_n((int *)dst, *(const int *)src,
				 __ATOMIC_RELEASE);
		break;
	case TP_CONF_SIZE:
	case TP_CONF_INT:
	case TP_CONF_PERCENT:
	case TP_CONF_DOUBLE: {
		uint64_t v;

		memcpy(&v, src, sizeof(v));
		__atomic_store_n((uint64_t *)dst, v, __ATOMIC_RELEASE);
		break;
	}
	case TP_CONF_PSIZE:
		memcpy(dst, src, sizeof(struct tp_psize));
		break;
	case TP_CONF_STRING:
		memcpy(dst, src, TP_CONF_STRING_MAX);
		break;
	}
}

TP_API int tp_ctl_set(struct tp_ctx *ctx, const char *key, const char *value)
{
	const struct tp_conf_key *k;
	struct tp_conf next;
	int rc;

	if (!ctx || !key || !value)
		return -EINVAL;
	k = tp_conf_find(key);
	if (!k) {
		if (tp_stat_find(key)) {
			tp_log(TP_LOG_ERROR, "tp_ctl_set: %s is a read-only statistic",
			       key);
			return -EPERM;
		}
		tp_conf_unknown(key, "tp_ctl_set", 0);
		return -ENOENT;
	}
	if (k->mode != TP_CONF_RUN) {
		tp_log(TP_LOG_ERROR,
		       "tp_ctl_set: %s is read when a context is created; set it in tpager.conf, TPAGER_OPTS or the opts of tp_ctx_create",
		       key);
		return -EPERM;
	}
	/* Parse and check a copy, so a refused value changes nothing. */
	next = ctx->conf;
	rc = tp_conf_set(&next, key, value, "tp_ctl_set", 0);
	if (rc)
		return rc;
	if (tp_conf_check(&next, "tp_ctl_set"))
		return -EINVAL;
	commit_field(&ctx->conf, &next, k);
	if (!strncmp(key, "pager.", 6) && ctx->pager && ctx->vmm) {
		struct tp_pager_conf pc;

		tp_ctx_pager_conf(&ctx->conf, ctx->vmm->device_bytes, &pc);
		tp_pager_set_conf(ctx->pager, &pc);
	}
	if ((!strncmp(key, "lineage.", 8) || !strncmp(key, "policy.", 7)) &&
	    ctx->lineage) {
		struct tp_lineage_conf lc;

		tp_ctx_lineage_conf(&ctx->conf, &lc);
		tp_lineage_set_conf(ctx->lineage, &lc);
	}
	if (!strcmp(key, "log.level"))
		tp_log_set_level((enum tp_log_level)next.log_level);
	return 0;
}

int tp_ctx_pair_in_force(const struct tp_stats *st, char *out, size_t len)
{
	char f[32], d[32];

	if (tp_conf_enum_name("policy.filter", st->tune_filter, f, sizeof(f)) ||
	    tp_conf_enum_name("policy.director", st->tune_director, d,
			      sizeof(d)))
		return -EINVAL;
	snprintf(out, len, "%s/%s", f, d);
	return 0;
}
