/* SPDX-License-Identifier: MIT */
/*
 * Severing: contents that cannot be regenerated are about to change (an
 * uncomputable tensor, a parameter say, updated in place while records
 * still read it). Records that read the old contents can
 * never be replayed again, so every live tensor downstream of them through
 * records is made uncomputable: regenerated first if it is evicted, then
 * detached from its record. It stays put (offloadable, never evicted) and
 * the records, with the fake-deleted tensors only they kept, go.
 *
 * This is the alternative to keeping a copy of the old version: it costs
 * no memory beyond what the live tensors already hold, and nothing is
 * recomputed afterwards from a version that no longer exists.
 *
 * A user's write (tp_tensor_write, an acquire with TP_WRITE) changes
 * contents the same way, on any tensor: what was made from them is
 * severed, and a tensor an op made stops being that op's output, since
 * replaying the op would bring back the op's contents, not the user's.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "lineage/lineage_int.h"

/* The records reading @n, and those reading their outputs, and so on. */
static int closure(struct tp_lineage *lin, struct tp_lin_node *n,
		   struct tp_lin_ptrs *recs)
{
	uint64_t mark = ++lin->mark_seq;
	struct tp_lin_use *u;
	size_t i;

	for (u = n->users; u; u = u->next) {
		if (u->rec->mark == mark)
			continue;
		u->rec->mark = mark;
		if (tp_lin_ptrs_push(recs, u->rec))
			return -ENOMEM;
	}
	for (i = 0; i < recs->n; i++) {
		struct tp_lin_rec *rec = recs->v[i];
		unsigned k;

		for (k = 0; k < rec->n_out; k++) {
			struct tp_lin_node *on;

			if (!rec->out[k] || !(on = rec->out[k]->lin.p))
				continue;
			for (u = on->users; u; u = u->next) {
				if (u->rec->mark == mark)
					continue;
				u->rec->mark = mark;
				if (tp_lin_ptrs_push(recs, u->rec))
					return -ENOMEM;
			}
		}
	}
	return 0;
}

int tp_lin_sever(struct tp_lineage *lin, struct tp_tensor *t)
{
	struct tp_lin_node *n = t->lin.p;
	struct tp_lin_ptrs recs = { 0 }, live = { 0 };
	size_t i;
	int ret = 0;

	if (!n || !n->nr_users)
		return 0;
	ret = closure(lin, n, &recs);
	for (i = 0; !ret && i < recs.n; i++) {
		struct tp_lin_rec *rec = recs.v[i];
		unsigned k;

		for (k = 0; !ret && k < rec->n_out; k++) {
			struct tp_tensor *o = rec->out[k];
			struct tp_lin_node *on = o ? o->lin.p : NULL;

			if (on && !on->user_freed)
				ret = tp_lin_ptrs_push(&live, o);
		}
	}
	if (ret)
		goto out;
	/*
	 * Mark them all uncomputable first, so that regenerating one cannot
	 * evict another already checked: from now on they can only be
	 * offloaded.
	 */
	for (i = 0; i < live.n; i++) {
		struct tp_tensor *o = live.v[i];

		((struct tp_lin_node *)o->lin.p)->severed = true;
		o->computable = false;
	}
	for (i = 0; i < live.n; i++) {
		struct tp_tensor *o = live.v[i];

		if (!tp_pager_has_evicted(o))
			continue;
		ret = tp_lineage_regenerate(lin, o);
		if (ret)
			break;
	}
	if (ret) {
		for (i = 0; i < live.n; i++) {
			struct tp_tensor *o = live.v[i];

			((struct tp_lin_node *)o->lin.p)->severed = false;
			o->computable = true;
		}
		goto out;
	}
	/* The records in @recs may be freed from here on. */
	for (i = 0; i < live.n; i++) {
		struct tp_tensor *o = live.v[i];

		((struct tp_lin_node *)o->lin.p)->severed = false;
		tp_lin_detach(lin, o);
	}
	lin->st.severed += live.n;
out:
	if (ret == -ENOMEM)
		tp_error(&lin->errors, ret, "lineage: cannot make room to keep what tensor %llu's old contents made",
			 (unsigned long long)t->id);
	free(recs.v);
	free(live.v);
	return ret;
}

int tp_lin_on_write(void *priv, struct tp_tensor *t)
{
	struct tp_lineage *lin = priv;
	struct tp_lin_node *n;
	int ret;

	/* Pages left behind by a partial eviction exist only as lineage:
	 * they come back before the record goes. */
	if (tp_pager_has_evicted(t) && t->lin.rec) {
		ret = tp_lineage_regenerate(lin, t);
		if (ret)
			return ret;
	}
	ret = tp_lin_sever(lin, t);
	if (ret)
		return ret;
	if (t->lin.rec) {
		tp_lin_detach(lin, t);
		lin->st.user_written++;
	}
	/*
	 * A record left reading the old version fails rather than replay
	 * from the new one (tp_regen_replay() checks it). Read only now:
	 * the node goes with the last record that read it.
	 */
	n = t->lin.p;
	if (n)
		n->version++;
	return 0;
}
