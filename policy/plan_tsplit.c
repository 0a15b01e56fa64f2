/* SPDX-License-Identifier: MIT */
/*
 * TSPLIT's cost model and planning algorithm (paper 002, §IV-B, IV-C).
 *
 * A tensor's accesses cut its life into gaps; a gap with an op strictly
 * inside it where the live tensors exceed the budget (a bottleneck of the
 * schedule with every tensor resident) is one where the tensor may be out.
 * For tensor s_j and a plan C:
 *
 *   ΔM_i[s_j, swap] = ΔM_i[s_j, recompute] = size(s_j)        (eq. 2)
 *	at every op i of the gap where it is out: a recomputed tensor from
 *	the access before the gap to the access after it; a swapped one
 *	until its reload starts, at the latest op p that leaves the reload
 *	hidden (and after the gap's last bottleneck).
 *   ΔT[s_j, swap] = max(size/B - Σ_{u=j+1}^{f-1} (1 - Oc) T_u, 0)
 *		   + max(size/B - Σ_{u=p}^{q-1} (1 - Oc) T_u, 0)	(eq. 3)
 *	with j the access before the gap, f its first bottleneck, q the
 *	access after it; plus the remap of its handles.
 *   ΔT[s_j, recompute] = Σ_{u ∈ I} T_u				(eq. 4)
 *	I: its producer, and the producers of the inputs it needs that are
 *	not resident at q (planned out, or freed after their last use:
 *	lineage keeps the record, the memory is gone), recursively; an input
 *	planned to swap is reloaded unhidden instead; plus the remap of
 *	s_j and of every input regenerated for it (tpager's handles are
 *	mapped again for a replay: a cost TSPLIT's pool does not have).
 *   ΔM_i[op i in p parts] = (p - 1)/p * min(size(cut ins), size(cut outs))
 *								(eq. 5)
 *	the cut inputs being those lineage can regenerate: tpager's
 *	micro-tensors leave by eviction, so eq. 6's c is recompute.
 *   ΔT[op i in p parts] = Σ ΔT[s^u, recompute] + (p - 1) * part_ns
 *								(eq. 6)
 *	each cut input with a later access regenerated there once (its rows
 *	left), and a fixed overhead per part (launches, smaller kernels).
 *
 * ΔT(C) sums these over the tensors and the split ops, and ΔM(C)_i the
 * memory out at op i. Oc is one number for the whole iteration (the link's
 * measured busy fraction), not a per-op simulation: that keeps the cost
 * of a plan a function of the plan alone, which tp_plan_eval() computes
 * and a search can compare.
 *
 * Alg. 2: for each bottleneck op in order, while it does not fit, take
 * the option with the smallest ΔT/ΔM of (step 1) swapping or recomputing
 * a resident tensor live across it and (step 2) running it in more parts;
 * ties go to the tensor made first (TSPLIT §IV-C: an earlier tensor's
 * swap starts sooner and frees memory longer). Greedy choices made at an
 * early bottleneck can be covered by later ones; a last pass undoes each
 * choice, costliest first, that the plan fits without.
 *
 * One file, past the usual length: Alg. 2 and the cost model of eq. 2-6
 * that it evaluates at each step belong together, and tests/policy-plan
 * checks both against a brute-force optimum as one.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "policy/plan.h"

/* Bytes within this of the budget fit: sums of doubles round. */
#define PLAN_EPS_BYTES	0.5
/* Passes of the undoing pass at most (each is O(choices) evaluations). */
#define PLAN_UNDO_PASSES 4

/* A gap between two accesses: ops (a, b) strictly inside; b >= n wraps. */
struct gap {
	uint32_t a, b;
	int64_t f, l;	/* first and last bottleneck inside, -1: none */
};

struct pw {
	const struct tp_plan_model *m;
	const struct tp_plan_choice *c;
	uint32_t n;
	double *mem;		/* M_i with every tensor resident */
	bool *bn;		/* M_i > M */
	double *tpre;		/* tpre[k] = Σ_{u<k} T_{u mod n}, k <= 2n */
	double tsum;		/* Σ T_u over the iteration */
	double oc;		/* Oc: the link's busy fraction, the plan's
				 * own transfers included */
	double swap_s;		/* the plan's transfer time each way, ns */
	uint32_t *swaps;	/* tensors the greedy search swaps */
	uint32_t n_swaps;
	double swap_cost;	/* their ΔT at oc */
	double *diff;		/* 2n + 1: the windows' bytes, by edge */
	int64_t *next_bn;	/* first bottleneck at or after k (of 2n), -1 */
	int64_t *prev_bn;	/* last bottleneck at or before k, -1 */
	double *cut_in, *cut_out;	/* per op: bytes eq. 5 cuts */
	double *saved;		/* per op: bytes out (windows), greedy */
	uint32_t *op_seen, *t_seen, stamp;
	uint32_t *stack;
};

static bool is_cut_in(const struct tp_plan_model *m, uint32_t op, uint32_t j)
{
	const struct tp_plan_op *o = &m->ops[op];

	if (!m->t[j].recomputable)
		return false;
	for (uint32_t k = 0; k < o->n_in && k < 64; k++)
		if (m->io[o->in + k] == j && ((o->cut_in >> k) & 1))
			return true;
	return false;
}

/*
 * Whether input @k of op @o is a regenerable cut input seen first there:
 * each such tensor counts once however often the op reads it.
 */
static bool first_cut_in(const struct tp_plan_model *m,
			 const struct tp_plan_op *o, uint32_t k)
{
	uint32_t j = m->io[o->in + k];

	if (k >= 64 || !((o->cut_in >> k) & 1) || !m->t[j].recomputable)
		return false;
	for (uint32_t q = 0; q < k; q++)
		if (m->io[o->in + q] == j && ((o->cut_in >> q) & 1))
			return false;
	return true;
}

/* Whether @j is accessed by op @x (binary search of its accesses). */
static bool accessed(const struct tp_plan_tensor *t, uint32_t x)
{
	uint32_t lo = 0, hi = t->n_acc;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->acc[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n_acc && t->acc[lo] == x;
}

static bool live_at(const struct tp_plan_tensor *t, uint32_t x)
{
	if (!t->n_acc)
		return !t->born;
	return !t->born || (t->acc[0] <= x && x <= t->acc[t->n_acc - 1]);
}

static struct gap gap_make(const struct pw *w, uint32_t a, uint32_t b)
{
	struct gap g = { .a = a, .b = b, .f = -1, .l = -1 };

	if (b >= a + 2) {
		int64_t f = w->next_bn[a + 1], l = w->prev_bn[b - 1];

		if (f >= 0 && f <= (int64_t)b - 1 && l >= (int64_t)a + 1) {
			g.f = f;
			g.l = l;
		}
	}
	return g;
}

/*
 * The gap of @j containing op @x (not an access of it), with @x in the
 * gap's numbering (x or x + n); false when @x is an access or outside
 * its life.
 */
static bool gap_at(const struct pw *w, uint32_t j, uint32_t x,
		   struct gap *g, uint32_t *xx)
{
	const struct tp_plan_tensor *t = &w->m->t[j];
	uint32_t lo = 0, hi = t->n_acc, n = w->n;

	if (!t->n_acc || !live_at(t, x) || accessed(t, x))
		return false;
	while (lo < hi) {		/* first access after x */
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->acc[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && lo < t->n_acc) {
		*g = gap_make(w, t->acc[lo - 1], t->acc[lo]);
		*xx = x;
		return true;
	}
	/* Before the first or after the last access: the wrapping gap. */
	*g = gap_make(w, t->acc[t->n_acc - 1], t->acc[0] + n);
	*xx = lo == 0 ? x + n : x;
	return true;
}

static double regen_ns(struct pw *w, uint32_t j, uint32_t at);

/*
 * Where @j is out in gap @g under the plan, and (with @cost) what that
 * gap costs: false when it stays.
 */
static bool gap_window(struct pw *w, uint32_t j, const struct gap *g,
		       uint32_t *from, uint32_t *to, enum tp_plan_how *how,
		       double *cost)
{
	const struct tp_plan_model *m = w->m;
	const struct tp_plan_tensor *t = &m->t[j];
	enum tp_plan_how h = w->c->how[j];
	bool released = g->f >= 0 && (h == TP_PLAN_SWAP ||
				      h == TP_PLAN_RECOMPUTE);
	bool cut = g->a < w->n && w->c->parts[g->a] >= 2 &&
		   is_cut_in(m, g->a, j);
	double s, fwd, bwd;
	uint32_t p, lo, hi;

	if (cost)
		*cost = 0;
	if (cost && released && h == TP_PLAN_SWAP && !cut && !(m->bw > 0))
		*cost = INFINITY;
	if (cut || (released && h == TP_PLAN_RECOMPUTE)) {
		/* Its rows left at a split op, or it is evicted: eq. 4 at
		 * the next access. */
		if (cost)
			*cost = regen_ns(w, j, g->b % w->n) + t->remap_ns;
		if (!released)
			return false;
		*from = g->a + 1;
		*to = g->b;
		*how = cut ? TP_PLAN_SPLIT : TP_PLAN_RECOMPUTE;
		return true;
	}
	if (!released)
		return false;
	/* Swap, eq. 3: out after the access before the gap, back from p. */
	s = m->bw > 0 ? t->bytes / m->bw : INFINITY;
	lo = (uint32_t)g->l + 1;
	hi = g->b;
	p = lo;
	if (w->oc < 1 && isfinite(s) &&
	    w->tpre[lo] <= w->tpre[g->b] - s / (1 - w->oc)) {
		double thr = w->tpre[g->b] - s / (1 - w->oc);

		/* the latest p in [lo, b] with Σ_{u=p}^{b-1} (1-Oc) T_u >=
		 * size/B */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo + 1) / 2;

			if (w->tpre[mid] <= thr)
				lo = mid;
			else
				hi = mid - 1;
		}
		p = lo;
	}
	if (cost && isfinite(*cost)) {
		fwd = s - (1 - w->oc) * (w->tpre[g->f] - w->tpre[g->a + 1]);
		bwd = s - (1 - w->oc) * (w->tpre[g->b] - w->tpre[p]);
		*cost = (fwd > 0 ? fwd : 0) + (bwd > 0 ? bwd : 0) +
			t->remap_ns;
	}
	*from = g->a + 1;
	*to = p;
	*how = TP_PLAN_SWAP;
	return p > g->a + 1;
}

/*
 * Whether @j is resident at op @x under the plan: live then (not freed
 * after its last access) and not planned out. *@evicted: when it is not,
 * whether its contents must be regenerated (rather than reloaded).
 */
static bool resident_at(struct pw *w, uint32_t j, uint32_t x, bool *evicted)
{
	const struct tp_plan_tensor *t = &w->m->t[j];
	enum tp_plan_how how;
	uint32_t from, to, xx;
	struct gap g;

	*evicted = true;
	if (!live_at(t, x))
		return false;
	if (!gap_at(w, j, x, &g, &xx))
		return true;	/* accessed at x */
	if (!gap_window(w, j, &g, &from, &to, &how, NULL) || xx < from ||
	    xx >= to)
		return true;
	*evicted = how != TP_PLAN_SWAP;
	return false;
}

/*
 * Eq. 4: the compute of regenerating @j at op @at, its producer and those
 * of the inputs not resident then, each op once; an input planned to swap
 * is reloaded, unhidden. INFINITY when an input that is gone cannot be
 * regenerated.
 */
static double regen_ns(struct pw *w, uint32_t j, uint32_t at)
{
	const struct tp_plan_model *m = w->m;
	size_t sp = 0;
	double ns = 0;

	if (!m->t[j].recomputable)
		return INFINITY;
	if (!++w->stamp) {	/* wrapped: start the marks afresh */
		memset(w->op_seen, 0, m->n_ops * sizeof(*w->op_seen));
		memset(w->t_seen, 0, m->n_t * sizeof(*w->t_seen));
		w->stamp = 1;
	}
	w->t_seen[j] = w->stamp;
	w->stack[sp++] = j;
	while (sp) {
		uint32_t x = w->stack[--sp];
		int32_t op = m->t[x].producer;
		const struct tp_plan_op *o;

		if (op < 0)
			return INFINITY;
		if (w->op_seen[op] == w->stamp)
			continue;
		w->op_seen[op] = w->stamp;
		o = &m->ops[op];
		ns += o->ns;
		for (uint32_t k = 0; k < o->n_in; k++) {
			uint32_t y = m->io[o->in + k];
			bool evicted;

			if (w->t_seen[y] == w->stamp)
				continue;
			w->t_seen[y] = w->stamp;
			if (resident_at(w, y, at, &evicted))
				continue;
			if (!evicted) {
				ns += m->t[y].bytes / m->bw + m->t[y].remap_ns;
				continue;
			}
			if (!m->t[y].recomputable)
				return INFINITY;
			/* mapped again for the replay, and out again after */
			ns += m->t[y].remap_ns;
			w->stack[sp++] = y;	/* each tensor pushed once */
		}
	}
	return ns;
}

/* Gaps of tensor @j, through @fn; stops when @fn returns false. */
static void for_each_gap(const struct pw *w, uint32_t j,
			 bool (*fn)(void *arg, const struct gap *g), void *arg)
{
	const struct tp_plan_tensor *t = &w->m->t[j];
	struct gap g;

	for (uint32_t k = 0; k + 1 < t->n_acc; k++) {
		if (t->acc[k + 1] < t->acc[k] + 2)
			continue;
		g = gap_make(w, t->acc[k], t->acc[k + 1]);
		if (!fn(arg, &g))
			return;
	}
	if (!t->born && t->n_acc &&
	    t->acc[0] + w->n >= t->acc[t->n_acc - 1] + 2) {
		g = gap_make(w, t->acc[t->n_acc - 1], t->acc[0] + w->n);
		fn(arg, &g);
	}
}

struct cost_arg {
	struct pw *w;
	uint32_t j;
	double ns;
};

static bool add_gap_cost(void *p, const struct gap *g)
{
	struct cost_arg *a = p;
	enum tp_plan_how how;
	uint32_t from, to;
	double c;

	gap_window(a->w, a->j, g, &from, &to, &how, &c);
	a->ns += c;
	return isfinite(a->ns);
}

/* ΔT of tensor @j under the plan: eq. 3 or 4 for each gap it is out. */
static double tensor_cost(struct pw *w, uint32_t j)
{
	struct cost_arg a = { .w = w, .j = j };

	for_each_gap(w, j, add_gap_cost, &a);
	return a.ns;
}

struct win_arg {
	struct pw *w;
	uint32_t j;
	bool list;		/* list them in @out, or add to w->diff */
	struct tp_plan_window *out;
	size_t n, cap;
	int err;
};

static bool add_gap_window(void *p, const struct gap *g)
{
	struct win_arg *a = p;
	struct pw *w = a->w;
	enum tp_plan_how how;
	uint32_t from, to;

	if (!gap_window(w, a->j, g, &from, &to, &how, NULL))
		return true;
	if (!a->list) {
		w->diff[from] += w->m->t[a->j].bytes;
		w->diff[to] -= w->m->t[a->j].bytes;
		return true;
	}
	if (a->n == a->cap) {
		struct tp_plan_window *o;

		o = tp_array_grow(a->out, &a->cap,
				  a->cap + 1, sizeof(*o), 64);
		if (!o) {
			a->err = -ENOMEM;
			return false;
		}
		a->out = o;
	}
	a->out[a->n++] = (struct tp_plan_window){
		.tensor = a->j, .from = from, .to = to, .how = how,
	};
	return true;
}

struct demand_arg {
	struct pw *w;
	uint32_t j;
	double s;
};

static bool add_gap_demand(void *p, const struct gap *g)
{
	struct demand_arg *a = p;
	const struct tp_plan_model *m = a->w->m;

	/* a released gap not cut by a split op: a copy each way */
	if (g->f >= 0 && !(a->w->c->parts[g->a] >= 2 &&
			   is_cut_in(m, g->a, a->j)))
		a->s += m->bw > 0 ? m->t[a->j].bytes / m->bw : INFINITY;
	return true;
}

/* The link time @j's swap takes each way, ns. */
static double swap_time(struct pw *w, uint32_t j)
{
	struct demand_arg a = { .w = w, .j = j };

	for_each_gap(w, j, add_gap_demand, &a);
	return a.s;
}

/*
 * Eq. 3's Oc with @s ns of the plan's own transfers each way: what
 * else uses the link, and the plan's copies spread over the iteration's
 * compute. Swaps that each hide behind their gap may not all fit on the
 * link together; this is what makes the next one cost more.
 */
static double occupancy(const struct pw *w, double s)
{
	double oc = w->m->occupancy;

	if (s > 0)
		oc += w->tsum > 0 ? s / w->tsum : 1;
	return oc < 1 ? oc : 1;
}

/*
 * The plan's link time and occupancy, and w->saved: the bytes out at
 * each op.
 */
static void rebuild(struct pw *w)
{
	const struct tp_plan_model *m = w->m;
	struct win_arg a = { .w = w };
	uint32_t n = w->n;
	double run = 0;

	w->swap_s = 0;
	for (uint32_t j = 0; j < m->n_t; j++)
		if (w->c->how[j] == TP_PLAN_SWAP)
			w->swap_s += swap_time(w, j);
	w->oc = occupancy(w, w->swap_s);
	memset(w->diff, 0, (2 * n + 1) * sizeof(*w->diff));
	for (uint32_t j = 0; j < m->n_t; j++) {
		a.j = j;
		for_each_gap(w, j, add_gap_window, &a);
	}
	for (uint32_t k = 0; k < 2 * n; k++) {
		run += w->diff[k];
		if (k < n)
			w->saved[k] = run;
		else
			w->saved[k - n] += run;
	}
}

/* Eq. 5 for op @i in @p parts. */
static double split_saving(const struct pw *w, uint32_t i, unsigned p)
{
	double c = w->cut_in[i] < w->cut_out[i] ? w->cut_in[i] :
						  w->cut_out[i];

	return p >= 2 ? (double)(p - 1) / p * c : 0;
}

static double split_overhead(const struct pw *w, unsigned p)
{
	return p >= 2 ? (double)(p - 1) * w->m->part_ns : 0;
}

static int check_model(const struct tp_plan_model *m)
{
	if (!m || (m->n_ops && !m->ops) || (m->n_t && !m->t) ||
	    !(m->bw >= 0) || !(m->occupancy >= 0 && m->occupancy <= 1) ||
	    !(m->budget >= 0) || !(m->part_ns >= 0))
		return -EINVAL;
	for (uint32_t i = 0; i < m->n_ops; i++) {
		const struct tp_plan_op *o = &m->ops[i];

		if (!(o->ns >= 0))
			return -EINVAL;
		for (uint32_t k = 0; k < o->n_in + o->n_out; k++)
			if (m->io[o->in + k] >= m->n_t)
				return -EINVAL;
		if (o->n_out && o->out != o->in + o->n_in)
			return -EINVAL;
	}
	for (uint32_t j = 0; j < m->n_t; j++) {
		const struct tp_plan_tensor *t = &m->t[j];

		if (!(t->bytes >= 0) || !(t->remap_ns >= 0) ||
		    t->producer >= (int32_t)m->n_ops ||
		    (t->recomputable && (!t->born || t->producer < 0)))
			return -EINVAL;
		for (uint32_t k = 0; k < t->n_acc; k++)
			if (t->acc[k] >= m->n_ops ||
			    (k && t->acc[k] <= t->acc[k - 1]))
				return -EINVAL;
	}
	return 0;
}

static void pw_free(struct pw *w)
{
	free(w->mem);
	free(w->bn);
	free(w->tpre);
	free(w->swaps);
	free(w->diff);
	free(w->next_bn);
	free(w->prev_bn);
	free(w->cut_in);
	free(w->cut_out);
	free(w->saved);
	free(w->op_seen);
	free(w->t_seen);
	free(w->stack);
}

/* What every evaluation of @m shares: the resident profile, the sums. */
static int pw_init(struct pw *w, const struct tp_plan_model *m,
		   const struct tp_plan_choice *c)
{
	uint32_t n = m->n_ops, n2 = 2 * m->n_ops;
	double *d;
	int64_t last;

	memset(w, 0, sizeof(*w));
	if (check_model(m))
		return -EINVAL;
	w->m = m;
	w->c = c;
	w->n = n;
	w->mem = calloc(n + 1, sizeof(*w->mem));
	w->bn = calloc(n + 1, sizeof(*w->bn));
	w->tpre = calloc(n2 + 1, sizeof(*w->tpre));
	w->swaps = calloc(m->n_t + 1, sizeof(*w->swaps));
	w->diff = calloc(n2 + 1, sizeof(*w->diff));
	w->next_bn = calloc(n2 + 1, sizeof(*w->next_bn));
	w->prev_bn = calloc(n2 + 1, sizeof(*w->prev_bn));
	w->cut_in = calloc(n + 1, sizeof(*w->cut_in));
	w->cut_out = calloc(n + 1, sizeof(*w->cut_out));
	w->saved = calloc(n + 1, sizeof(*w->saved));
	w->op_seen = calloc(n + 1, sizeof(*w->op_seen));
	w->t_seen = calloc(m->n_t + 1, sizeof(*w->t_seen));
	w->stack = calloc(m->n_t + 1, sizeof(*w->stack));
	d = calloc(n + 1, sizeof(*d));
	if (!w->mem || !w->bn || !w->tpre || !w->swaps || !w->diff ||
	    !w->next_bn || !w->prev_bn ||
	    !w->cut_in || !w->cut_out || !w->saved || !w->op_seen ||
	    !w->t_seen || !w->stack || !d) {
		free(d);
		pw_free(w);
		return -ENOMEM;
	}
	/* M_i: a born tensor from its first access to its last. */
	for (uint32_t j = 0; j < m->n_t; j++) {
		const struct tp_plan_tensor *t = &m->t[j];

		if (!t->born) {
			d[0] += t->bytes;
		} else if (t->n_acc) {
			d[t->acc[0]] += t->bytes;
			d[t->acc[t->n_acc - 1] + 1] -= t->bytes;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		w->mem[i] = (i ? w->mem[i - 1] : 0) + d[i];
		w->bn[i] = w->mem[i] > m->budget + PLAN_EPS_BYTES;
	}
	free(d);
	for (uint32_t k = 0; k < n2; k++)
		w->tpre[k + 1] = w->tpre[k] + m->ops[k % n].ns;
	w->tsum = n ? w->tpre[n] : 0;
	w->oc = occupancy(w, 0);
	last = -1;
	for (uint32_t k = 0; k < n2; k++) {
		if (w->bn[k % n])
			last = k;
		w->prev_bn[k] = last;
	}
	last = -1;
	for (uint32_t k = n2; k-- > 0;) {
		if (w->bn[k % n])
			last = k;
		w->next_bn[k] = last;
	}
	/* Eq. 5's sizes: distinct regenerable cut inputs, cut outputs. */
	for (uint32_t i = 0; i < n; i++) {
		const struct tp_plan_op *o = &m->ops[i];

		if (o->max_parts < 2)
			continue;
		for (uint32_t k = 0; k < o->n_in && k < 64; k++)
			if (first_cut_in(m, o, k))
				w->cut_in[i] += m->t[m->io[o->in + k]].bytes;
		for (uint32_t k = 0; k < o->n_out && k < 64; k++)
			if ((o->cut_out >> k) & 1)
				w->cut_out[i] += m->t[m->io[o->out + k]].bytes;
	}
	return 0;
}

unsigned tp_plan_split_parts(unsigned max_parts, unsigned *out)
{
	unsigned n = 0;

	for (unsigned p = 2; p <= max_parts && n < 32; p *= 2) {
		out[n++] = p;
		if (p > UINT32_MAX / 2)
			break;
	}
	return n;
}

int tp_plan_choice_alloc(const struct tp_plan_model *m,
			 struct tp_plan_choice *c)
{
	c->how = calloc(m->n_t + 1, sizeof(*c->how));
	c->parts = calloc(m->n_ops + 1, sizeof(*c->parts));
	if (!c->how || !c->parts) {
		tp_plan_choice_free(c);
		return -ENOMEM;
	}
	return 0;
}

void tp_plan_choice_free(struct tp_plan_choice *c)
{
	free(c->how);
	free(c->parts);
	c->how = NULL;
	c->parts = NULL;
}

static int cmp_window(const void *a, const void *b)
{
	const struct tp_plan_window *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

/* Evaluate with a prepared @w: cost, fit, and the bytes out per op. */
static int evaluate(struct pw *w, bool want_windows, double *cur,
		    struct tp_plan_result *r)
{
	const struct tp_plan_model *m = w->m;
	struct win_arg a = { .w = w };
	double cost = 0;

	memset(r, 0, sizeof(*r));
	rebuild(w);
	a.list = true;
	for (uint32_t j = 0; j < m->n_t; j++) {
		cost += tensor_cost(w, j);
		if (want_windows) {
			a.j = j;
			for_each_gap(w, j, add_gap_window, &a);
			if (a.err) {
				free(a.out);
				return a.err;
			}
		}
	}
	r->fits = true;
	for (uint32_t i = 0; i < w->n; i++) {
		double x = w->mem[i] - w->saved[i] -
			   split_saving(w, i, w->c->parts[i]);

		cost += split_overhead(w, w->c->parts[i]);
		if (cur)
			cur[i] = x;
		if (x > m->budget + PLAN_EPS_BYTES)
			r->fits = false;
		if (x > r->peak)
			r->peak = x;
		if (w->mem[i] > r->peak_reside)
			r->peak_reside = w->mem[i];
		r->bottlenecks += w->bn[i];
	}
	r->cost_ns = cost;
	if (want_windows) {
		if (a.n)
			qsort(a.out, a.n, sizeof(*a.out), cmp_window);
		r->w = a.out;
		r->n_w = a.n;
	}
	return 0;
}

int tp_plan_eval(const struct tp_plan_model *m,
		 const struct tp_plan_choice *c, bool want_windows,
		 struct tp_plan_result *r)
{
	struct pw w;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = pw_init(&w, m, c);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < m->n_ops; i++)
		if (c->parts[i] >= 2 && c->parts[i] > m->ops[i].max_parts) {
			pw_free(&w);
			return -EINVAL;
		}
	ret = evaluate(&w, want_windows, NULL, r);
	pw_free(&w);
	return ret;
}

/* One option of Alg. 2: a tensor's way out, or an op's parts. */
struct option {
	bool split;
	uint32_t j;		/* tensor, or the op */
	unsigned v;		/* enum tp_plan_how, or parts */
	double ratio;		/* ΔT/ΔM */
	double dt, dm;
	uint32_t born_at;	/* for ties: the earlier made first */
};

static bool better(const struct option *a, const struct option *b)
{
	if (a->ratio != b->ratio)
		return a->ratio < b->ratio;
	return a->born_at < b->born_at;
}

/*
 * The options of one round at a bottleneck: the smallest ΔT/ΔM (Alg.
 * 2), and the cheapest that closes the op's deficit alone.
 */
struct round {
	double deficit;
	struct option best, close;
	bool found, closes;
};

static void consider(struct round *r, const struct option *o)
{
	if (!r->found || better(o, &r->best)) {
		r->best = *o;
		r->found = true;
	}
	if (o->dm >= r->deficit &&
	    (!r->closes || o->dt < r->close.dt ||
	     (o->dt == r->close.dt && o->born_at < r->close.born_at))) {
		r->close = *o;
		r->closes = true;
	}
}

/* Step 1 (Alg. 2 lines 6-8): swap or recompute a resident tensor. */
static void step_tensors(struct pw *w, uint32_t i, struct round *rd)
{
	const struct tp_plan_model *m = w->m;
	struct tp_plan_choice *c = (struct tp_plan_choice *)w->c;

	for (uint32_t j = 0; j < m->n_t; j++) {
		const struct tp_plan_tensor *t = &m->t[j];
		static const enum tp_plan_how ways[] = {
			TP_PLAN_SWAP, TP_PLAN_RECOMPUTE,
		};
		double base;

		if (c->how[j] != TP_PLAN_RESIDE || !t->n_acc ||
		    !(t->bytes > 0) || !live_at(t, i) || accessed(t, i) ||
		    !(t->swappable || t->recomputable))
			continue;
		base = tensor_cost(w, j);
		for (size_t k = 0; k < 2; k++) {
			struct option o = {
				.j = j, .v = ways[k],
				.born_at = t->acc[0],
			};
			double nc;

			if ((ways[k] == TP_PLAN_SWAP && (!t->swappable ||
							 !(m->bw > 0))) ||
			    (ways[k] == TP_PLAN_RECOMPUTE && !t->recomputable))
				continue;
			c->how[j] = ways[k];
			if (ways[k] == TP_PLAN_SWAP) {
				/* its copies busy the link for every swap */
				double oc = w->oc;

				w->oc = occupancy(w, w->swap_s +
						     swap_time(w, j));
				nc = tensor_cost(w, j) - w->swap_cost;
				for (uint32_t q = 0; q < w->n_swaps; q++)
					nc += tensor_cost(w, w->swaps[q]);
				w->oc = oc;
			} else {
				nc = tensor_cost(w, j);
			}
			c->how[j] = TP_PLAN_RESIDE;
			if (!isfinite(nc))
				continue;
			/* eq. 2: ΔM = size(s_j) */
			o.dt = nc - base;
			o.dm = t->bytes;
			o.ratio = o.dt / o.dm;
			consider(rd, &o);
		}
	}
}

/* ΔT of op @i's regenerable cut inputs under the plan as it stands. */
static double cut_inputs_cost(struct pw *w, uint32_t i)
{
	const struct tp_plan_op *o = &w->m->ops[i];
	double ns = 0;

	for (uint32_t k = 0; k < o->n_in && k < 64; k++)
		if (first_cut_in(w->m, o, k))
			ns += tensor_cost(w, w->m->io[o->in + k]);
	return ns;
}

/* Step 2 (lines 9-11): run op @i in more parts (eq. 5, 6). */
static void step_split(struct pw *w, uint32_t i, struct round *rd)
{
	const struct tp_plan_op *o = &w->m->ops[i];
	struct tp_plan_choice *c = (struct tp_plan_choice *)w->c;
	unsigned cand[32], n, now = c->parts[i];
	double base;

	if (o->max_parts < 2 || !(w->cut_in[i] > 0) || !(w->cut_out[i] > 0))
		return;
	base = cut_inputs_cost(w, i) + split_overhead(w, now);
	n = tp_plan_split_parts(o->max_parts, cand);
	for (unsigned k = 0; k < n; k++) {
		struct option opt = { .split = true, .j = i, .v = cand[k],
				      .born_at = i };
		double dm, dt;

		if (cand[k] <= now)
			continue;
		dm = split_saving(w, i, cand[k]) - split_saving(w, i, now);
		if (!(dm > 0))
			continue;
		c->parts[i] = cand[k];
		dt = cut_inputs_cost(w, i) + split_overhead(w, cand[k]) - base;
		c->parts[i] = now;
		if (!isfinite(dt))
			continue;
		opt.dt = dt;
		opt.dm = dm;
		opt.ratio = dt / dm;
		consider(rd, &opt);
	}
}

/*
 * The undoing pass: each choice, costliest first, back to resident (an
 * op back to whole) when every op still fits as well as it did and ΔT
 * falls.
 */
static int undo_pass(struct pw *w, bool *changed)
{
	const struct tp_plan_model *m = w->m;
	struct tp_plan_choice *c = (struct tp_plan_choice *)w->c;
	struct tp_plan_result r;
	double *cur = malloc((w->n + 1) * sizeof(*cur));
	double *alt = malloc((w->n + 1) * sizeof(*alt));
	struct option *opt = malloc((m->n_t + w->n + 1) * sizeof(*opt));
	size_t n_opt = 0;
	double cost;
	int ret = -ENOMEM;

	*changed = false;
	if (!cur || !alt || !opt)
		goto out;
	ret = evaluate(w, false, cur, &r);
	if (ret)
		goto out;
	cost = r.cost_ns;
	for (uint32_t j = 0; j < m->n_t; j++)
		if (c->how[j] != TP_PLAN_RESIDE)
			opt[n_opt++] = (struct option){
				.j = j, .ratio = -tensor_cost(w, j),
				.born_at = m->t[j].n_acc ? m->t[j].acc[0] : 0,
			};
	for (uint32_t i = 0; i < w->n; i++)
		if (c->parts[i] >= 2)
			opt[n_opt++] = (struct option){
				.split = true, .j = i, .born_at = i,
				.ratio = -(cut_inputs_cost(w, i) +
					   split_overhead(w, c->parts[i])),
			};
	/* costliest first: sort by ratio (the negated cost) */
	for (size_t a = 1; a < n_opt; a++) {
		struct option x = opt[a];
		size_t b = a;

		while (b > 0 && better(&x, &opt[b - 1])) {
			opt[b] = opt[b - 1];
			b--;
		}
		opt[b] = x;
	}
	for (size_t k = 0; k < n_opt; k++) {
		unsigned was = opt[k].split ? c->parts[opt[k].j] :
					      (unsigned)c->how[opt[k].j];
		bool keep = true;

		if (opt[k].split)
			c->parts[opt[k].j] = 0;
		else
			c->how[opt[k].j] = TP_PLAN_RESIDE;
		ret = evaluate(w, false, alt, &r);
		if (ret)
			goto out;
		if (r.cost_ns < cost) {
			keep = false;
			for (uint32_t i = 0; i < w->n && !keep; i++)
				if (alt[i] > cur[i] + PLAN_EPS_BYTES &&
				    alt[i] > m->budget + PLAN_EPS_BYTES)
					keep = true;
		}
		if (keep) {
			if (opt[k].split)
				c->parts[opt[k].j] = was;
			else
				c->how[opt[k].j] = (enum tp_plan_how)was;
			continue;
		}
		memcpy(cur, alt, w->n * sizeof(*cur));
		cost = r.cost_ns;
		*changed = true;
	}
	ret = 0;
out:
	free(cur);
	free(alt);
	free(opt);
	return ret;
}

int tp_plan_tsplit(const struct tp_plan_model *m, struct tp_plan_choice *c)
{
	struct pw w;
	bool changed = true;
	int ret;

	ret = pw_init(&w, m, c);
	if (ret)
		return ret;
	memset(c->how, 0, m->n_t * sizeof(*c->how));
	memset(c->parts, 0, m->n_ops * sizeof(*c->parts));
	rebuild(&w);
	/* Alg. 2, line 2: the ops in order; line 5: each bottleneck. */
	for (uint32_t i = 0; i < w.n; i++) {
		if (!w.bn[i])
			continue;
		for (;;) {
			struct round rd = { 0 };
			struct option best;

			rd.deficit = w.mem[i] - w.saved[i] -
				     split_saving(&w, i, c->parts[i]) -
				     m->budget;
			if (rd.deficit <= PLAN_EPS_BYTES)
				break;
			step_tensors(&w, i, &rd);
			step_split(&w, i, &rd);
			/* Nothing left to take: the op does not fit; the
			 * plan goes on to relieve the others. */
			if (!rd.found)
				break;
			/*
			 * Step 3 (lines 12-16): the better of the two. The
			 * smallest ratio closes the op's deficit at that
			 * ratio at best, and costs its own ΔT at least; one
			 * option that closes the deficit alone for less is
			 * better still (a small tensor that suffices beats
			 * a large one cheaper per byte).
			 */
			best = rd.best;
			if (rd.closes && rd.close.dt < rd.best.ratio *
			    (rd.deficit > rd.best.dm ? rd.deficit :
			     rd.best.dm))
				best = rd.close;
			if (best.split) {
				c->parts[i] = best.v;
			} else {
				c->how[best.j] = (enum tp_plan_how)best.v;
				if (best.v == TP_PLAN_SWAP)
					w.swaps[w.n_swaps++] = best.j;
			}
			/* windows move with the link's load and the cuts */
			rebuild(&w);
			w.swap_cost = 0;
			for (uint32_t q = 0; q < w.n_swaps; q++)
				w.swap_cost += tensor_cost(&w, w.swaps[q]);
		}
	}
	for (int pass = 0; !ret && changed && pass < PLAN_UNDO_PASSES; pass++)
		ret = undo_pass(&w, &changed);
	pw_free(&w);
	return ret;
}
