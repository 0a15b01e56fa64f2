/* SPDX-License-Identifier: MIT */
/*
 * Costs: each op type's and each record's moving-average cost, and c_r(t),
 * the cost of regenerating t with its evicted ancestors.
 *
 * c_r is DTR's e*(t) (Kirisame et al., "Dynamic Tensor Rematerialization",
 * §4 and appendix; MegEngine's write-up §2.2): the producer's cost plus the
 * cost of every evicted tensor that would be regenerated first. Summing
 * over the evicted ancestry on each query is linear in its size, so evicted
 * tensors are kept in equivalence classes with union-find, each class
 * holding the sum of its members' costs; connected evicted tensors share a
 * class. The pager tells nobody when it evicts, so classes are built from
 * the page states when a query meets them (a query also merges what was
 * evicted next to the members it reaches first); a member that came back
 * leaves its class by taking its cost out (a union cannot be split); and
 * the whole structure is dropped and rebuilt lazily once most members are
 * stale or after as many queries as it has members.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/array.h"
#include "lineage/lineage_int.h"
#include "vmm/vmm.h"

#define TP_LIN_DEFAULT_COST_NS	1000	/* a prior of 1 µs */
#define UF_NONE			UINT32_MAX

/* --- op types -------------------------------------------------------- */

static size_t type_hash(const struct tp_op_type *type, size_t cap)
{
	uintptr_t h = (uintptr_t)type;

	h ^= h >> 17;
	h *= (uintptr_t)0x9e3779b97f4a7c15ULL;
	return (h >> 7) & (cap - 1);
}

static int types_grow(struct tp_lineage *lin)
{
	size_t cap = lin->cap_types ? lin->cap_types * 2 : 64, i;
	struct tp_lin_type **nt = calloc(cap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (i = 0; i < lin->cap_types; i++) {
		struct tp_lin_type *e = lin->types[i];
		size_t h;

		if (!e)
			continue;
		for (h = type_hash(e->type, cap); nt[h]; h = (h + 1) & (cap - 1))
			;
		nt[h] = e;
	}
	free(lin->types);
	lin->types = nt;
	lin->cap_types = cap;
	return 0;
}

static struct tp_lin_type *type_find(struct tp_lineage *lin,
				     const struct tp_op_type *type)
{
	size_t h;

	if (!lin->cap_types)
		return NULL;
	for (h = type_hash(type, lin->cap_types); lin->types[h];
	     h = (h + 1) & (lin->cap_types - 1))
		if (lin->types[h]->type == type)
			return lin->types[h];
	return NULL;
}

struct tp_lin_type *tp_lin_type_get(struct tp_lineage *lin,
				    const struct tp_op_type *type)
{
	struct tp_lin_type *e = type_find(lin, type);
	size_t h;

	if (e)
		return e;
	if (2 * (lin->nr_types + 1) > lin->cap_types && types_grow(lin)) {
		errno = ENOMEM;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->type = type;
	e->avg_ns = -1;
	for (h = type_hash(type, lin->cap_types); lin->types[h];
	     h = (h + 1) & (lin->cap_types - 1))
		;
	lin->types[h] = e;
	lin->nr_types++;
	return e;
}

uint64_t tp_lin_type_prior_ns(struct tp_vmm *vmm,
			      const struct tp_op_type *type,
			      const void *params, size_t params_len,
			      const size_t *in_bytes, unsigned n_in)
{
	uint64_t ns;

	if (!tp_vmm_type_ns(vmm, type, params, params_len, in_bytes, n_in,
			    &ns))
		return ns;
	if (!type->cost_ns)
		return TP_LIN_DEFAULT_COST_NS;
	return type->cost_ns(params, params_len, in_bytes, n_in);
}

static double ema(double avg, double x, double alpha)
{
	return avg < 0 ? x : avg + alpha * (x - avg);
}

/* @rec's op as its type's cost model prices it. */
static uint64_t rec_model_ns(struct tp_lineage *lin,
			     const struct tp_lin_rec *rec)
{
	size_t in_bytes[16];
	unsigned n = rec->n_in < 16 ? rec->n_in : 16;

	for (unsigned k = 0; k < n; k++)
		in_bytes[k] = rec->in[k].t->bytes;
	return tp_lin_type_prior_ns(lin->vmm, rec->type, rec->params,
				    rec->params_len, in_bytes, n);
}

void tp_lin_note_cost(struct tp_lineage *lin, struct tp_lin_rec *rec,
		      uint64_t ns)
{
	double alpha = lin->conf.cost_alpha;

	if (!rec)
		return;
	/* Decisions that do not depend on the host's speed. */
	if (lin->conf.costs_model)
		ns = rec_model_ns(lin, rec);
	rec->cost_ns = ema(rec->cost_ns, (double)ns, alpha);
	rec->ts->avg_ns = ema(rec->ts->avg_ns, (double)ns, alpha);
	rec->ts->runs++;
}

void tp_lin_note_type_cost(struct tp_lineage *lin, struct tp_lin_type *ts,
			   uint64_t ns)
{
	ts->avg_ns = ema(ts->avg_ns, (double)ns, lin->conf.cost_alpha);
	ts->runs++;
}

double tp_lineage_op_cost_ns(struct tp_lineage *lin,
			     const struct tp_op_type *type)
{
	struct tp_lin_type *e = type_find(lin, type);

	if (e && e->avg_ns >= 0)
		return e->avg_ns;
	if (!type->cost_ns)
		return TP_LIN_DEFAULT_COST_NS;
	return (double)type->cost_ns(NULL, 0, NULL, 0);
}

/* What replaying @rec costs, and the views of its outputs made again. */
static double rec_cost(const struct tp_lin_rec *rec)
{
	if (rec->cost_ns >= 0)
		return rec->cost_ns + rec->view_ns;
	return (rec->ts->avg_ns >= 0 ? rec->ts->avg_ns :
		TP_LIN_DEFAULT_COST_NS) + rec->view_ns;
}

void tp_lineage_add_view_cost(struct tp_lineage *lin, struct tp_tensor *t,
			      uint64_t ns)
{
	struct tp_lin_rec *rec = t->lin.rec;

	(void)lin;
	if (rec)
		rec->view_ns += (double)ns;
}

/* --- union-find of evicted tensors ----------------------------------- */

static bool uf_valid(const struct tp_lineage *lin, const struct tp_lin_node *n)
{
	return n->uf != UF_NONE && n->uf_epoch == lin->uf_epoch;
}

static uint32_t uf_find(struct tp_lineage *lin, uint32_t i)
{
	struct tp_lin_uf_node *u = lin->uf;

	while (u[i].parent != i) {
		u[i].parent = u[u[i].parent].parent;	/* path halving */
		i = u[i].parent;
	}
	return i;
}

static uint32_t uf_union(struct tp_lineage *lin, uint32_t a, uint32_t b)
{
	struct tp_lin_uf_node *u = lin->uf;

	a = uf_find(lin, a);
	b = uf_find(lin, b);
	if (a == b)
		return a;
	if (u[a].rank < u[b].rank) {
		uint32_t t = a;

		a = b;
		b = t;
	}
	u[b].parent = a;
	if (u[a].rank == u[b].rank)
		u[a].rank++;
	u[a].cost += u[b].cost;
	u[a].pages += u[b].pages;
	return a;
}

/* Push @n at @sp of the stack *@stk of *@cap; -ENOMEM leaves it as it was. */
static int stk_push(struct tp_lin_node ***stk, size_t *cap, size_t sp,
		    struct tp_lin_node *n)
{
	struct tp_lin_node **s = tp_array_grow(*stk, cap, sp + 1, sizeof(*s),
					       64);

	if (!s)
		return -ENOMEM;
	*stk = s;
	s[sp] = n;
	return 0;
}

static int uf_add(struct tp_lineage *lin, struct tp_lin_node *n)
{
	struct tp_lin_rec *rec = n->t->lin.rec;
	struct tp_lin_uf_node *u;

	u = tp_array_grow(lin->uf, &lin->uf_cap, (size_t)lin->uf_len + 1,
			  sizeof(*u), 1024);
	if (!u)
		return -ENOMEM;
	lin->uf = u;
	u = &lin->uf[lin->uf_len];
	u->parent = lin->uf_len;
	u->rank = 0;
	u->own = rec ? rec_cost(rec) : 0;
	u->cost = u->own;
	u->own_pages = tp_pager_evicted_pages(n->t);
	u->pages = u->own_pages;
	n->uf = lin->uf_len++;
	n->uf_epoch = lin->uf_epoch;
	return 0;
}

void tp_lin_uf_forget(struct tp_lineage *lin, struct tp_lin_node *n)
{
	uint32_t r;

	if (!uf_valid(lin, n))
		return;
	r = uf_find(lin, n->uf);
	lin->uf[r].cost -= lin->uf[n->uf].own;
	lin->uf[r].pages -= lin->uf[n->uf].own_pages;
	lin->uf[n->uf].own = 0;
	lin->uf[n->uf].own_pages = 0;
	n->uf = UF_NONE;
	lin->uf_dead++;
}

/*
 * Drop every class once most members are stale, or after as many queries
 * as there are members (evictions deeper than a class's edge are seen only
 * when it is rebuilt); they rebuild lazily, amortised O(1) per query.
 */
static void uf_maybe_rebuild(struct tp_lineage *lin)
{
	if (++lin->uf_queries <= lin->uf_len + 1024 &&
	    (lin->uf_dead < 4096 || 2 * lin->uf_dead < lin->uf_len))
		return;
	lin->uf_queries = 0;
	if (++lin->uf_epoch == 0)
		lin->uf_epoch = 1;
	lin->uf_len = 0;
	lin->uf_dead = 0;
}

/*
 * The class of @n when its tensor is evicted, else UF_NONE. A tensor met
 * for the first time joins the classes of its evicted inputs, which are
 * built the same way (explicit stack, @stk being scratch space).
 */
static uint32_t uf_class(struct tp_lineage *lin, struct tp_lin_node *n,
			 struct tp_lin_node ***stk, size_t *cap)
{
	size_t sp = 0;

	if (!tp_pager_has_evicted(n->t)) {
		tp_lin_uf_forget(lin, n);
		return UF_NONE;
	}
	if (!uf_valid(lin, n) && uf_add(lin, n))
		return UF_NONE;
	/*
	 * A known member's inputs are looked at again: one evicted since
	 * the class was built joins it now (and its own inputs with it).
	 */
	(*stk)[sp++] = n;
	while (sp) {
		struct tp_lin_node *m = (*stk)[--sp];
		struct tp_lin_rec *rec = m->t->lin.rec;
		unsigned k;

		if (!rec)
			continue;
		for (k = 0; k < rec->n_in; k++) {
			struct tp_lin_node *y = rec->in[k].node;

			if (!tp_pager_has_evicted(y->t)) {
				tp_lin_uf_forget(lin, y);
				continue;
			}
			if (!uf_valid(lin, y)) {
				if (uf_add(lin, y))
					return uf_find(lin, n->uf);
				if (stk_push(stk, cap, sp, y))
					return uf_find(lin, n->uf);
				sp++;
			}
			uf_union(lin, m->uf, y->uf);
		}
	}
	return uf_find(lin, n->uf);
}

/* Evicted ancestors c_r walks exactly before it falls back on classes. */
#define CR_WALK_MAX	256

/*
 * The cost of regenerating @t's evicted ancestry exactly: every evicted
 * tensor reachable from @t through evicted inputs, each once (a diamond
 * is regenerated once), found by a walk with an epoch mark. Union-find
 * classes only ever merge, so a class keeps members that are not
 * ancestors of the tensor asked about (a sibling evicted beside an
 * input) and misses evictions past its edge until it is rebuilt: on
 * DTR's Transformer log at budget ratio 0.2 a fifth of the answers
 * differed from the exact sum (those below it by a quarter on average),
 * and the policy's choices grew chains of 37 replays. The walk is linear
 * in the ancestry, so past CR_WALK_MAX tensors (a long evicted chain)
 * it gives up (false) and the classes answer.
 */
static bool evicted_ancestry_ns(struct tp_lineage *lin,
				const struct tp_tensor *t, double *cost,
				size_t *pages)
{
	struct tp_lin_rec *rec = t->lin.rec;
	struct tp_lin_ptrs *stk = &lin->anc_stk;
	uint64_t epoch = ++lin->cr_epoch;
	size_t seen = 0;
	double c = 0;
	size_t np = 0;
	unsigned k;

	/*
	 * The policy asks for every candidate of every choice: the walk
	 * reads the inputs' tensors and their records, not the nodes, and
	 * most inputs (weights, resident activations) cost one read.
	 */
	stk->n = 0;
	for (;;) {
		for (k = 0; k < rec->n_in; k++) {
			struct tp_tensor *y = rec->in[k].t;

			if (!tp_pager_has_evicted(y) || y->lin.mark == epoch)
				continue;
			y->lin.mark = epoch;
			if (!y->lin.rec) {
				*cost = INFINITY;	/* cannot come back */
				return true;
			}
			if (++seen > CR_WALK_MAX)
				return false;
			c += rec_cost(y->lin.rec);
			np += tp_pager_evicted_pages(y);
			if (tp_lin_ptrs_push(stk, y->lin.rec))
				return false;
		}
		if (!stk->n) {
			*cost = c;
			*pages = np;
			return true;
		}
		rec = stk->v[--stk->n];
	}
}

double tp_lineage_regen_cost(struct tp_lineage *lin, const struct tp_tensor *t,
			     size_t *anc_pages)
{
	struct tp_lin_rec *rec = t->lin.rec;
	uint32_t seen[16];
	unsigned nseen = 0, k;
	size_t scratch;
	double c, anc;

	if (!anc_pages)
		anc_pages = &scratch;
	*anc_pages = 0;
	if (!tp_lineage_can_regenerate(lin, t))
		return INFINITY;
	c = rec_cost(rec);
	if (!rec->n_in)
		return c;
	if (evicted_ancestry_ns(lin, t, &anc, anc_pages))
		return c + anc;
	uf_maybe_rebuild(lin);
	/* The policy asks on its hot path: the walk's stack is kept. */
	if (!lin->uf_stk) {
		lin->uf_stk = malloc(64 * sizeof(*lin->uf_stk));
		if (!lin->uf_stk)
			return c;
		lin->uf_stk_cap = 64;
	}
	/* Build every class first: building one may merge another. */
	for (k = 0; k < rec->n_in; k++) {
		struct tp_lin_node *y = rec->in[k].node;

		if (!tp_pager_has_evicted(y->t))
			continue;
		if (!y->t->lin.rec)
			return INFINITY;	/* an input that cannot come back */
		uf_class(lin, y, &lin->uf_stk, &lin->uf_stk_cap);
	}
	for (k = 0; k < rec->n_in; k++) {
		struct tp_lin_node *y = rec->in[k].node;
		uint32_t r, i;

		if (!tp_pager_has_evicted(y->t) || !uf_valid(lin, y))
			continue;
		r = uf_find(lin, y->uf);
		/* Each class once; a wider op only risks counting twice. */
		for (i = 0; i < nseen && seen[i] != r; i++)
			;
		if (i < nseen)
			continue;
		if (nseen < 16)
			seen[nseen++] = r;
		c += lin->uf[r].cost;
		*anc_pages += lin->uf[r].pages;
	}
	return c;
}

/*
 * The other half of DTR's evicted neighbourhood: every evicted tensor
 * reachable from @t through the outputs of the records that read it,
 * each once, walked as evicted_ancestry_ns() walks inputs; past
 * CR_WALK_MAX tensors what was summed is the answer (a lower bound).
 */
static double evicted_descendants_ns(struct tp_lineage *lin,
				     const struct tp_tensor *t)
{
	uint64_t epoch = ++lin->cr_epoch;
	struct tp_lin_node *n = t->lin.p;
	size_t sp = 0, seen = 0;
	double c = 0;

	while (n) {
		for (struct tp_lin_use *u = n->users; u; u = u->next) {
			struct tp_lin_rec *rec = u->rec;

			for (unsigned k = 0; k < rec->n_out; k++) {
				struct tp_tensor *o = rec->out[k];
				struct tp_lin_node *on = o ? o->lin.p : NULL;

				if (!on || on->cr_mark == epoch ||
				    !tp_pager_has_evicted(o))
					continue;
				on->cr_mark = epoch;
				if (++seen > CR_WALK_MAX)
					return c;
				c += rec_cost(rec);
				if (stk_push(&lin->uf_stk, &lin->uf_stk_cap, sp,
					     on))
					return c;
				sp++;
			}
		}
		n = sp ? lin->uf_stk[--sp] : NULL;
	}
	return c;
}

double tp_lineage_projected_cost(struct tp_lineage *lin,
				 const struct tp_tensor *t,
				 bool (*gone)(void *priv,
					      const struct tp_tensor *y),
				 void *priv, size_t *anc_pages)
{
	struct tp_lin_rec *rec = t->lin.rec;
	uint64_t epoch;
	size_t sp = 0, seen = 0;
	double c;

	*anc_pages = 0;
	if (!tp_lineage_can_regenerate(lin, t))
		return INFINITY;
	c = rec_cost(rec);
	epoch = ++lin->cr_epoch;
	for (;;) {
		for (unsigned k = 0; k < rec->n_in; k++) {
			struct tp_lin_node *y = rec->in[k].node;
			bool ev = tp_pager_has_evicted(y->t);

			if (y->cr_mark == epoch)
				continue;
			y->cr_mark = epoch;
			/* what survives, resident, ends the walk there */
			if (!ev && (!y->t->lin.rec || !gone(priv, y->t)))
				continue;
			if (!y->t->lin.rec)
				return INFINITY;	/* cannot come back */
			if (++seen > CR_WALK_MAX)
				return c;
			c += rec_cost(y->t->lin.rec);
			*anc_pages += ev ? tp_pager_evicted_pages(y->t) : y->t->nr_pages;
			if (stk_push(&lin->uf_stk, &lin->uf_stk_cap, sp, y))
				return c;
			sp++;
		}
		if (!sp)
			return c;
		rec = lin->uf_stk[--sp]->t->lin.rec;
	}
}

double tp_lineage_evict_cost(struct tp_lineage *lin, const struct tp_tensor *t)
{
	double c = tp_lineage_regen_cost(lin, t, NULL);

	if (isinf(c) || !t->lin.p)
		return c;
	return c + evicted_descendants_ns(lin, t);
}

double tp_lineage_own_cost(struct tp_lineage *lin, const struct tp_tensor *t)
{
	if (!tp_lineage_can_regenerate(lin, t))
		return INFINITY;
	return rec_cost(t->lin.rec);
}

double tp_lineage_recompute_ns(struct tp_lineage *lin,
			       const struct tp_tensor *t)
{
	return tp_lineage_regen_cost(lin, t, NULL);
}

void tp_lin_cost_fini(struct tp_lineage *lin)
{
	size_t i;

	for (i = 0; i < lin->cap_types; i++)
		free(lin->types[i]);
	free(lin->types);
	lin->types = NULL;
	lin->cap_types = lin->nr_types = 0;
	free(lin->uf);
	lin->uf = NULL;
	lin->uf_len = lin->uf_cap = 0;
	free(lin->uf_stk);
	lin->uf_stk = NULL;
	lin->uf_stk_cap = 0;
	free(lin->anc_stk.v);
	lin->anc_stk = (struct tp_lin_ptrs){ 0 };
}
