/* SPDX-License-Identifier: MIT */
/*
 * Records and their references: creation, fake deletion, and release of
 * what nothing needs any more. A release can free a record, which can
 * leave a fake-deleted input unneeded, which frees its producer, and so
 * on up a chain of any length: the walk uses lineage's work list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/log.h"
#include "lineage/lineage_int.h"

int tp_lin_work_push(struct tp_lineage *lin, void *p)
{
	if (lin->nr_work == lin->cap_work) {
		void **w;

		w = tp_array_grow(lin->work, &lin->cap_work,
				  lin->cap_work + 1, sizeof(*w), 64);
		if (!w)
			return -ENOMEM;
		lin->work = w;
	}
	lin->work[lin->nr_work++] = p;
	return 0;
}

struct tp_lin_node *tp_lin_node_get(struct tp_lineage *lin,
				    struct tp_tensor *t)
{
	struct tp_lin_node *n = t->lin.p;

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n) {
		errno = ENOMEM;
		return NULL;
	}
	n->t = t;
	n->uf = UINT32_MAX;
	cds_list_add_tail(&n->link, &lin->nodes);
	t->lin.p = n;
	return n;
}

static void node_free(struct tp_lineage *lin, struct tp_lin_node *n)
{
	tp_lin_uf_forget(lin, n);
	n->t->lin.p = NULL;
	cds_list_del(&n->link);
	free(n);
}

struct tp_lin_rec *tp_lin_rec_new(struct tp_lineage *lin,
				  const struct tp_op_type *type,
				  const void *params, size_t params_len,
				  struct tp_tensor *const *inputs, unsigned n_in,
				  const size_t *out_bytes, unsigned n_out)
{
	struct tp_lin_type *ts;
	struct tp_lin_rec *rec;
	size_t sz;
	unsigned k;
	char *p;

	ts = tp_lin_type_get(lin, type);
	if (!ts)
		return NULL;
	/* One allocation: the record, its uses, outputs, sizes, params. */
	sz = sizeof(*rec) + n_in * sizeof(*rec->in) +
	     n_out * (sizeof(*rec->out) + sizeof(*rec->out_bytes)) +
	     params_len;
	rec = calloc(1, sz);
	if (!rec) {
		errno = ENOMEM;
		return NULL;
	}
	for (k = 0; k < n_in; k++) {
		if (!tp_lin_node_get(lin, inputs[k])) {
			free(rec);
			errno = ENOMEM;
			return NULL;
		}
	}
	p = (char *)(rec + 1);
	rec->in = (struct tp_lin_use *)p;
	p += n_in * sizeof(*rec->in);
	rec->out = (struct tp_tensor **)p;
	p += n_out * sizeof(*rec->out);
	rec->out_bytes = (size_t *)p;
	p += n_out * sizeof(*rec->out_bytes);
	if (params_len) {
		memcpy(p, params, params_len);
		rec->params = p;
	}
	rec->params_len = params_len;
	memcpy(rec->out_bytes, out_bytes, n_out * sizeof(*out_bytes));
	rec->type = type;
	rec->ts = ts;
	rec->n_in = n_in;
	rec->n_out = n_out;
	rec->replayable = !(type->flags & TP_OP_NONDETERMINISTIC);
	rec->cost_ns = -1;
	rec->view_ns = 0;
	rec->seq = ++lin->rec_seq;

	for (k = 0; k < n_in; k++) {
		struct tp_lin_node *n = inputs[k]->lin.p;
		struct tp_lin_use *u = &rec->in[k];

		u->rec = rec;
		u->node = n;
		u->t = inputs[k];
		u->version = n->version;
		u->prev = NULL;
		u->next = n->users;
		if (n->users)
			n->users->prev = u;
		n->users = u;
		n->nr_users++;
		tp_pager_tensor_get(inputs[k]);
	}
	cds_list_add_tail(&rec->link, &lin->recs);
	if (++lin->st.records > lin->st.records_peak)
		lin->st.records_peak = lin->st.records;
	return rec;
}

void tp_lin_rec_attach(struct tp_lineage *lin, struct tp_lin_rec *rec,
		       unsigned k, struct tp_tensor *t)
{
	(void)lin;
	rec->out[k] = t;
	t->lin.rec = rec;
	t->lin.out = k;
	t->computable = rec->replayable;
	rec->refs++;
}

int tp_lin_rec_keep_whole(struct tp_lineage *lin, struct tp_lin_rec *rec,
			  unsigned k, struct tp_tensor *t)
{
	struct tp_lin_node *n = tp_lin_node_get(lin, t);

	if (!n)
		return -ENOMEM;
	if (!rec->whole) {
		rec->whole = calloc(rec->n_out, sizeof(*rec->whole) +
					       sizeof(*rec->whole_version));
		if (!rec->whole)
			return -ENOMEM;
		rec->whole_version = (uint64_t *)(rec->whole + rec->n_out);
	}
	tp_pager_tensor_get(t);
	rec->whole[k] = t;
	rec->whole_version[k] = n->version;
	return 0;
}

/* Let go of what @rec kept whole. */
static void whole_put(struct tp_lineage *lin, struct tp_lin_rec *rec)
{
	for (unsigned k = 0; rec->whole && k < rec->n_out; k++)
		if (rec->whole[k])
			tp_pager_tensor_put(lin->pg, rec->whole[k]);
	free(rec->whole);
	rec->whole = NULL;
}

/* @n's tensor is needed by nothing: it leaves its producer and lineage. */
static void node_gone(struct tp_lineage *lin, struct tp_lin_node *n)
{
	struct tp_tensor *t = n->t;
	struct tp_lin_rec *rec = t->lin.rec;

	if (rec) {
		rec->out[t->lin.out] = NULL;
		t->lin.rec = NULL;
		t->computable = false;
		if (!--rec->refs && tp_lin_work_push(lin, rec))
			tp_log(TP_LOG_ERROR, "lineage: out of memory releasing a record; it leaks");
	}
	if (n->user_freed)
		lin->st.fake_deleted--;
	if (n->kept)
		lin->st.kept--;
	node_free(lin, n);
}

static void rec_destroy(struct tp_lineage *lin, struct tp_lin_rec *rec)
{
	unsigned k;

	tp_lin_timing_forget(lin, rec);

	for (k = 0; k < rec->n_in; k++) {
		struct tp_lin_use *u = &rec->in[k];
		struct tp_lin_node *n = u->node;
		struct tp_tensor *t = n->t;

		if (u->prev)
			u->prev->next = u->next;
		else
			n->users = u->next;
		if (u->next)
			u->next->prev = u->prev;
		n->nr_users--;
		/*
		 * A freed input no one reads any more really goes (fake
		 * deleted, or kept for the records: tp_lin_on_free saw every
		 * free); an input not made by an op needs no node.
		 */
		if (!n->nr_users && (n->user_freed || n->kept || !t->lin.rec))
			node_gone(lin, n);
		tp_pager_tensor_put(lin->pg, t);
	}
	for (k = 0; k < rec->n_out; k++) {
		struct tp_tensor *t = rec->out[k];

		if (t) {	/* only when discarding a half-made record */
			t->lin.rec = NULL;
			t->computable = false;
		}
	}
	whole_put(lin, rec);
	cds_list_del(&rec->link);
	lin->st.records--;
	free(rec);
}

/* Free every record on the work list and whatever they alone kept. */
static void drain(struct tp_lineage *lin)
{
	while (lin->nr_work)
		rec_destroy(lin, lin->work[--lin->nr_work]);
}

void tp_lin_rec_discard(struct tp_lineage *lin, struct tp_lin_rec *rec)
{
	rec_destroy(lin, rec);
	drain(lin);
}

void tp_lin_detach(struct tp_lineage *lin, struct tp_tensor *t)
{
	struct tp_lin_rec *rec = t->lin.rec;
	struct tp_lin_node *n = t->lin.p;

	t->computable = false;
	if (!rec)
		return;
	if (n)
		tp_lin_uf_forget(lin, n);
	rec->out[t->lin.out] = NULL;
	t->lin.rec = NULL;
	if (!--rec->refs) {
		rec_destroy(lin, rec);
		drain(lin);
	}
}

bool tp_lin_on_free(void *priv, struct tp_tensor *t)
{
	struct tp_lineage *lin = priv;
	struct tp_lin_node *n = t->lin.p;

	if (!n)
		return false;
	if (!n->nr_users) {
		node_gone(lin, n);
		drain(lin);
		return false;
	}
	if (tp_lineage_can_regenerate(lin, t)) {
		/* Fake deletion: memory goes, the record stays for the
		 * records that read it; it goes with the last of them. */
		n->user_freed = true;
		lin->st.fake_deleted++;
		tp_lin_uf_forget(lin, n);
		return true;
	}
	/*
	 * Records read contents that cannot be regenerated. The pager keeps
	 * a freed tensor's memory while references remain, and the records
	 * hold one each: the contents stay (offloadable, never evicted) and
	 * go with the last of them. Nothing is regenerated or severed.
	 */
	n->kept = true;
	lin->st.kept++;
	return false;
}

void tp_lin_records_fini(struct tp_lineage *lin)
{
	struct tp_lin_node *n, *nn;
	struct tp_lin_rec *rec;

	/* Tensors forget lineage first: the puts below may free them. */
	cds_list_for_each_entry_safe(n, nn, &lin->nodes, link) {
		n->t->lin.rec = NULL;
		n->t->lin.p = NULL;
		n->t->computable = false;
		cds_list_del(&n->link);
		free(n);
	}
	while (!cds_list_empty(&lin->recs)) {
		unsigned k;

		rec = cds_list_first_entry(&lin->recs, struct tp_lin_rec, link);
		for (k = 0; k < rec->n_in; k++)
			tp_pager_tensor_put(lin->pg, rec->in[k].t);
		whole_put(lin, rec);
		cds_list_del(&rec->link);
		free(rec);
	}
	lin->st.records = 0;
	free(lin->work);
	lin->work = NULL;
	lin->nr_work = lin->cap_work = 0;
}
