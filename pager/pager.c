/* SPDX-License-Identifier: MIT */
/*
 * The pager: its creation and teardown, and the victim and regeneration
 * ops it is given. The rest of what pager.h promises lives beside it, one
 * concern a file: accounting.c, copies.c, swap_cache.c, unmap.c,
 * tensor.c, identity.c, stats.c, acquire.c, offload.c, reclaim.c, ...
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "base/log.h"
#include "pager/pager_int.h"

void tp_pager_poll_copies(struct tp_pager *pg, bool all);

/* --- regeneration defaults: nothing can be regenerated ---------------- */

static bool no_regen_can(void *priv, const struct tp_tensor *t)
{
	return false;
}

static int no_regen(void *priv, struct tp_tensor *t)
{
	return -TP_ENOREGEN;
}

static bool no_regen_on_free(void *priv, struct tp_tensor *t)
{
	return false;
}

static const struct tp_regen_ops no_regen_ops = {
	.can_regenerate = no_regen_can,
	.regenerate = no_regen,
	.on_free = no_regen_on_free,
};

/* --- creation ---------------------------------------------------------- */

void tp_pager_error(struct tp_pager *pg, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tp_error(&pg->errors, err, "%s", msg);
}

void tp_pager_set_conf(struct tp_pager *pg, const struct tp_pager_conf *pc)
{
	/*
	 * The options read while running; the rest were used at creation
	 * (pager.range_cache among them, which the contiguous pool turns off
	 * there).
	 */
	pg->conf.range_cache_freed = pc->range_cache_freed;
	pg->conf.move_evicted = pc->move_evicted;
	pg->conf.range_cache_max = pc->range_cache_max;
	pg->conf.rescue = pc->rescue;
	pg->conf.work_limit = pc->work_limit;
	pg->conf.high_watermark = pc->high_watermark;
	pg->conf.low_watermark = pc->low_watermark;
}

struct tp_pager *tp_pager_create(struct tp_vmm *vmm, struct tp_tracer *tracer,
				 const struct tp_pager_conf *pc,
				 const struct tp_errors *errors)
{
	struct tp_pager *pg;
	int ret;

	pg = calloc(1, sizeof(*pg));
	if (!pg) {
		errno = ENOMEM;
		return NULL;
	}
	pg->vmm = vmm;
	pg->tracer = tracer;
	pg->conf = *pc;
	if (errors)
		pg->errors = *errors;
	pg->chunk = vmm->granularity;
	pg->next_id = 1;
	CDS_INIT_LIST_HEAD(&pg->tensors);
	CDS_INIT_LIST_HEAD(&pg->inflight);
	CDS_INIT_LIST_HEAD(&pg->cands);
	CDS_INIT_LIST_HEAD(&pg->lru);
	CDS_INIT_LIST_HEAD(&pg->cache.ranges);
	for (size_t i = 0; i < TP_RANGE_BUCKETS; i++)
		CDS_INIT_LIST_HEAD(&pg->cache.by_size[i]);
	/*
	 * On a backend where the device is the host's own memory and has no
	 * stream handle for kernels, the caller touches acquired memory from
	 * its own thread: acquire must wait for the copies there.
	 */
	pg->host_waits = tp_vmm_has_data(vmm) &&
			 !tp_vmm_stream_handle(vmm, TP_STREAM_COMPUTE);

	if (pc->budget < pg->chunk) {
		tp_pager_error(pg, -EINVAL, "pager.budget %llu is less than one chunk (%zu)",
			       (unsigned long long)pc->budget, pg->chunk);
		ret = -EINVAL;
		goto err_free;
	}
	ret = tp_vmm_pool_create(vmm, pc->budget);
	if (ret) {
		tp_pager_error(pg, ret, "cannot create the chunk pool");
		goto err_free;
	}
	if (pc->contiguous) {
		ret = tp_vmm_pool_set_contiguous(vmm);
		if (ret) {
			tp_pager_error(pg, ret, "vmm.mode = contiguous: not on the %s backend",
				       vmm->ops->name);
			goto err_free;
		}
		/*
		 * No range cache: the contiguous pool's memory is never mapped
		 * again, and a freed block goes back to it at once, as a
		 * caching allocator's does (cached, it would place the next
		 * tensors elsewhere); nor does an evicted tensor move.
		 */
		pg->conf.range_cache = false;
	}
	ret = tp_swap_init(pg, pc->host_budget, pc->swap_ahead);
	if (ret)
		goto err_free;
	tp_slab_init(pg, pc->slab_fraction);
	ret = tp_lookup_init(pg);
	if (ret)
		goto err_swap;
	tp_victim_lru_init(pg, &pg->victim);
	pg->regen = no_regen_ops;
	return pg;

err_swap:
	tp_swap_fini(pg);
err_free:
	free(pg);
	errno = -ret;
	return NULL;
}

void tp_pager_destroy(struct tp_pager *pg)
{
	struct tp_tensor *t, *tmp;

	if (!pg)
		return;
	tp_vmm_sync_all(pg->vmm);
	tp_pager_poll(pg);
	/* Everything left is freed, whoever held it. */
	cds_list_for_each_entry_safe(t, tmp, &pg->tensors, link) {
		t->pins = 0;
		if (t->pinned_sum)
			tp_tensor_pinned_add(t, -(long)t->pinned_pages);
		if (t->pages)
			for (size_t i = 0; i < t->nr_pages; i++)
				t->pages[i].pins = 0;
		t->refs = 1;
		tp_pager_tensor_put(pg, t);
	}
	tp_range_cache_fini(pg);
	tp_slab_fini(pg);
	tp_vmm_sync_all(pg->vmm);
	tp_pager_poll_copies(pg, true);
	free(pg->copies);
	free(pg->run_buf);
	if (pg->use_ev)
		tp_vmm_event_put(pg->vmm, pg->use_ev);
	tp_swap_fini(pg);
	tp_lookup_fini(pg);
	free(pg);
}

/* Tell the victim ops of every candidate: forgotten, or learnt. */
static void tell_cands(struct tp_pager *pg, bool learn)
{
	struct tp_tensor *t;

	cds_list_for_each_entry(t, &pg->cands, cand) {
		if (learn)
			pg->victim.add(pg->victim.priv, t);
		else
			pg->victim.del(pg->victim.priv, t);
	}
}

void tp_pager_set_victim_ops(struct tp_pager *pg, const struct tp_victim_ops *ops)
{
	/* Hand the candidates over: the old ops forget them, the new learn. */
	tell_cands(pg, false);
	if (ops)
		pg->victim = *ops;
	else
		tp_victim_lru_init(pg, &pg->victim);
	tell_cands(pg, true);
}

void tp_pager_offer_cands(struct tp_pager *pg)
{
	tell_cands(pg, false);
	tell_cands(pg, true);
}

void tp_pager_set_regen_ops(struct tp_pager *pg, const struct tp_regen_ops *ops)
{
	pg->regen = ops ? *ops : no_regen_ops;
}
