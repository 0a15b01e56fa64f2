/* SPDX-License-Identifier: MIT */
/*
 * The lineage of a context: creation, the callbacks the pager calls, and
 * teardown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "lineage/lineage_int.h"

bool tp_lineage_can_regenerate(struct tp_lineage *lin,
			       const struct tp_tensor *t)
{
	const struct tp_lin_node *n = t->lin.p;
	const struct tp_lin_rec *rec = t->lin.rec;

	(void)lin;
	return t->computable && n && rec && rec->replayable && !n->severed;
}

double tp_lin_rec_bytes(const struct tp_lin_rec *rec)
{
	double bytes = 0;
	unsigned k;

	for (k = 0; k < rec->n_in; k++)
		bytes += (double)rec->in[k].t->bytes;
	for (k = 0; k < rec->n_out; k++)
		bytes += (double)rec->out_bytes[k];
	return bytes;
}

double tp_lineage_regen_bytes(struct tp_lineage *lin,
			      const struct tp_tensor *t, bool *by_rows)
{
	const struct tp_lin_rec *rec = t->lin.rec;

	*by_rows = false;
	/* A flag before the record's checks and its walk. */
	if (!rec || !(rec->type->flags & TP_OP_SPLIT_LOCAL) ||
	    !tp_lineage_can_regenerate(lin, t))
		return 0;
	*by_rows = true;
	return tp_lin_rec_bytes(rec);
}

static bool can_regenerate_cb(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_can_regenerate(priv, t);
}

struct tp_lineage *tp_lineage_create(struct tp_pager *pg, struct tp_vmm *vmm,
				     struct tp_tracer *tracer,
				     const struct tp_lineage_conf *lc,
				     const struct tp_errors *errors,
				     struct tp_ctx *owner)
{
	struct tp_lineage *lin;

	if (!pg || !vmm || !lc) {
		errno = EINVAL;
		return NULL;
	}
	lin = calloc(1, sizeof(*lin));
	if (!lin) {
		errno = ENOMEM;
		return NULL;
	}
	lin->pg = pg;
	lin->vmm = vmm;
	lin->tracer = tracer;
	lin->conf = *lc;
	if (errors)
		lin->errors = *errors;
	lin->owner = owner;
	lin->uf_epoch = 1;
	CDS_INIT_LIST_HEAD(&lin->nodes);
	CDS_INIT_LIST_HEAD(&lin->recs);
	lin->ops.can_regenerate = can_regenerate_cb;
	lin->ops.regenerate = tp_lin_regenerate_cb;
	lin->ops.on_free = tp_lin_on_free;
	lin->ops.settle = tp_lin_settle;
	lin->ops.on_write = tp_lin_on_write;
	lin->ops.priv = lin;
	tp_pager_set_regen_ops(lin->pg, &lin->ops);
	return lin;
}

void tp_lineage_set_conf(struct tp_lineage *lin,
			 const struct tp_lineage_conf *lc)
{
	lin->conf = *lc;
}

void tp_lineage_destroy(struct tp_lineage *lin)
{
	if (!lin)
		return;
	tp_pager_set_regen_ops(lin->pg, NULL);
	tp_lin_timing_fini(lin);
	tp_lin_records_fini(lin);
	tp_lin_cost_fini(lin);
	free(lin);
}

int tp_lin_ptrs_grow(struct tp_lin_ptrs *p)
{
	void **v = tp_array_grow(p->v, &p->cap, p->n + 1, sizeof(*v), 16);

	if (!v)
		return -ENOMEM;
	p->v = v;
	return 0;
}

void tp_lineage_get_stats(struct tp_lineage *lin, struct tp_lineage_stats *st)
{
	*st = lin->st;
}

/* --- lineage's cost table for the policy (pager/hooks.h) ----------- */

static double ops_recompute_ns(void *priv, const struct tp_tensor *t,
			       size_t *anc_pages)
{
	return tp_lineage_regen_cost(priv, t, anc_pages);
}

static double ops_evict_ns(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_evict_cost(priv, t);
}

static double ops_own_ns(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_own_cost(priv, t);
}

static double ops_projected_ns(void *priv, const struct tp_tensor *t,
			       bool (*gone)(void *gpriv,
					    const struct tp_tensor *y),
			       void *gpriv, size_t *anc_pages)
{
	return tp_lineage_projected_cost(priv, t, gone, gpriv, anc_pages);
}

static bool ops_computable(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_can_regenerate(priv, t);
}

static double ops_regen_bytes(void *priv, const struct tp_tensor *t,
			      bool *by_rows)
{
	return tp_lineage_regen_bytes(priv, t, by_rows);
}

static bool ops_regen_needs(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_regen_needs(priv, t);
}

static bool ops_regen_reads(void *priv, const struct tp_tensor *t)
{
	return tp_lineage_regen_reads(priv, t);
}

static void ops_made_from(void *priv, const struct tp_tensor *t,
			  void (*fn)(void *fpriv, const struct tp_tensor *o),
			  void *fpriv)
{
	tp_lineage_made_from(priv, t, fn, fpriv);
}

void tp_lineage_cost_ops(struct tp_lineage *lin, struct tp_cost_ops *ops)
{
	*ops = (struct tp_cost_ops){
		.recompute_ns = ops_recompute_ns,
		.evict_ns = ops_evict_ns,
		.own_ns = ops_own_ns,
		.projected_ns = ops_projected_ns,
		.computable = ops_computable,
		.regen_bytes = ops_regen_bytes,
		.regen_needs = ops_regen_needs,
		.regen_reads = ops_regen_reads,
		.made_from = ops_made_from,
		.priv = lin,
	};
}

void tp_lineage_set_op_hooks(struct tp_lineage *lin,
			     const struct tp_op_hooks *hooks)
{
	if (hooks)
		lin->op_hooks = *hooks;
	else
		lin->op_hooks = (struct tp_op_hooks){ 0 };
}

