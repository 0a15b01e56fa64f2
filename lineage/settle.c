/* SPDX-License-Identifier: MIT */
/*
 * Settling before a free: MegEngine's real deletion (the DTR write-up,
 * §3.4: "If the dependent tensors are not in the GPU memory, Regenerate
 * must be called to restore them before the tensor they depend on is
 * deleted").
 *
 * An eviction is priced at c_r with the ancestors resident then. When the
 * program later frees one of them, fake deletion keeps the record, and
 * the evicted tensor's regeneration now replays that ancestor too, and
 * through it every ancestor the program freed before: in a backward pass
 * a gradient evicted while the gradient it was made from was alive comes
 * back, once that one is freed, through the whole chain of freed
 * gradients and the forward pass they read (DTR's ResNet-32 log at 18% of
 * its peak: one read replayed 243 ops). Regenerated while the ancestor is
 * still resident, it costs what it was priced at; afterwards the policy
 * sees it at its true price (c_r through the freed ancestor) and can keep
 * it or send it away knowing.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "lineage/lineage_int.h"

/*
 * The live tensors whose regeneration reads @n: outputs of the records
 * reading it, through outputs that are evicted and freed (they come back
 * only as part of such a regeneration). A resident output ends the path.
 */
static int dependents(struct tp_lineage *lin, struct tp_lin_node *n,
		      struct tp_lin_ptrs *out)
{
	struct tp_lin_ptrs stk = { 0 };
	uint64_t mark = ++lin->cr_epoch;
	int ret = 0;

	for (;;) {
		for (struct tp_lin_use *u = n->users; u && !ret; u = u->next) {
			struct tp_lin_rec *rec = u->rec;

			for (unsigned k = 0; k < rec->n_out && !ret; k++) {
				struct tp_tensor *o = rec->out[k];
				struct tp_lin_node *on = o ? o->lin.p : NULL;

				if (!on || on->cr_mark == mark ||
				    !tp_pager_has_evicted(o))
					continue;
				on->cr_mark = mark;
				ret = tp_lin_ptrs_push(on->user_freed ? &stk : out, o);
			}
		}
		if (ret || !stk.n)
			break;
		n = ((struct tp_tensor *)stk.v[--stk.n])->lin.p;
	}
	free(stk.v);
	return ret;
}

static bool is_settling(void *priv, const struct tp_tensor *y)
{
	const struct tp_lineage *lin = priv;

	return y == lin->settling;
}

void tp_lin_settle(void *priv, struct tp_tensor *t)
{
	struct tp_lineage *lin = priv;
	struct tp_lin_node *n = t->lin.p;
	struct tp_lin_ptrs dep = { 0 };

	if (!n || !n->nr_users || !tp_lineage_can_regenerate(lin, t) ||
	    dependents(lin, n, &dep))
		goto out;
	for (size_t i = 0; i < dep.n; i++) {
		struct tp_tensor *o = dep.v[i];
		size_t pages;
		double now, after;

		if (!tp_pager_has_evicted(o))
			continue;	/* came back with another */
		now = tp_lineage_regen_cost(lin, o, &pages);
		lin->settling = t;
		after = tp_lineage_projected_cost(lin, o, is_settling, lin,
						  &pages);
		lin->settling = NULL;
		/*
		 * Worth it when the free more than doubles the price: at
		 * worst the tensor is sent away again unused, and the replay
		 * now is lost, which is less than what the free adds.
		 */
		if (isinf(now) || after <= 2 * now)
			continue;
		/* Not fatal: the tensor stays evicted, at its new price. */
		(void)tp_lineage_regenerate(lin, o);
		lin->st.settled++;
	}
out:
	free(dep.v);
}
