/* SPDX-License-Identifier: MIT */
/*
 * Coop's sliding window (§3.3) and cheap-tensor partitioning (§3.4) on the
 * contiguous pool. The list Coop keeps sorted by address is rebuilt at each
 * decision from the pool's free runs and the candidates' chunk runs: it is
 * O(N log N) rather than Coop's O(N), and needs no bookkeeping on every
 * allocation.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "base/array.h"
#include "pager/pager.h"
#include "policy/filter_coop.h"
#include "policy/policy_priv.h"
#include "vmm/vmm.h"

/*
 * Coop's windows: for each segment, the shortest window ending there
 * that covers @n chunks with no gap (h >= 0, so the cheapest ending
 * there), given to @fn with its sum of h, added in address order. Two
 * pointers: O(@nseg) but for the sums.
 */
static void each_window(const struct tp_coop_seg *seg, size_t nseg, size_t n,
			void (*fn)(void *priv, size_t lo, size_t hi,
				   double sum),
			void *priv)
{
	size_t l = 0, len = 0;

	for (size_t r = 0; r < nseg; r++) {
		double sum = 0;

		/* A gap (a chunk that cannot leave) closes every window. */
		if (r && seg[r - 1].start + seg[r - 1].len != seg[r].start) {
			l = r;
			len = 0;
		}
		len += seg[r].len;
		while (l < r && len - seg[l].len >= n) {
			len -= seg[l].len;
			l++;
		}
		if (len < n)
			continue;
		/* Summed afresh: a running sum would drift. */
		for (size_t i = l; i <= r; i++)
			sum += seg[i].h;
		fn(priv, l, r, sum);
	}
}

/* The cheapest window so far; the first of equals. */
struct cheapest {
	bool found;
	size_t lo, hi;
	double sum;
};

static void keep_cheapest(void *priv, size_t lo, size_t hi, double sum)
{
	struct cheapest *c = priv;

	if (!c->found || sum < c->sum)
		*c = (struct cheapest){ true, lo, hi, sum };
}

bool tp_coop_window(const struct tp_coop_seg *seg, size_t nseg, size_t n,
		    size_t *lo, size_t *hi, double *cost)
{
	struct cheapest c = { .found = false };

	each_window(seg, nseg, n, keep_cheapest, &c);
	if (c.found) {
		*lo = c.lo;
		*hi = c.hi;
		*cost = c.sum;
	}
	return c.found;
}

/* A tensor of the window search: h known exactly only once asked. */
struct coop_cand {
	struct tp_tensor *t;
	double h;
	enum tp_leave how;
	int state;		/* 0 not asked, 1 h known, -1 cannot leave */
};

/* A window of tp_coop_window(): the shortest covering n ending at hi. */
struct coop_win {
	size_t lo, hi;
	double lb;		/* the sum of its members' bounds */
};

struct seg_list {
	struct tp_coop_seg *v;
	size_t n, cap;
	bool oom;
	/* what the tensor being added brings */
	double h;
	size_t cand;
};

static void seg_push(struct seg_list *l, struct tp_tensor *t, size_t start,
		     size_t len, double h, size_t cand)
{
	if (l->n == l->cap) {
		struct tp_coop_seg *v;

		v = tp_array_grow(l->v, &l->cap,
				  l->cap + 1, sizeof(*v), 64);
		if (!v) {
			l->oom = true;
			return;
		}
		l->v = v;
	}
	l->v[l->n++] = (struct tp_coop_seg){
		.start = start, .len = len, .h = h, .t = t, .cand = cand,
	};
}

static void add_free(void *arg, size_t start, size_t len)
{
	seg_push(arg, NULL, start, len, 0, 0);
}

static void add_tensor_run(void *arg, const struct tp_tensor *t, size_t start,
			   size_t len)
{
	struct seg_list *l = arg;

	seg_push(l, (struct tp_tensor *)t, start, len, l->h, l->cand);
}

static int by_start(const void *a, const void *b)
{
	const struct tp_coop_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int by_bound(const void *a, const void *b)
{
	const struct coop_win *x = a, *y = b;

	if (x->lb != y->lb)
		return x->lb < y->lb ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static double staleness(const struct tp_tensor *t, uint64_t now)
{
	return now > t->last_access_ns ? (double)(now - t->last_access_ns) : 1;
}

static double cost_floor(double c)
{
	return c < TP_FILTER_MIN_COST_NS ? TP_FILTER_MIN_COST_NS : c;
}

/* Coop §3.3: h = c/s, c the cost of the way the director sends it away. */
static double coop_h(const struct tp_tensor *t,
		     const struct tp_director_in *in, enum tp_leave how,
		     uint64_t now)
{
	double c = how == TP_LEAVE_EVICT ? in->c_r :
		   (in->b > 0 ? in->m / in->b : INFINITY);

	return cost_floor(c) / staleness(t, now);
}

/*
 * A bound under coop_h() either way out, without the walk: an eviction
 * costs at least the op that made t (tp_policy_regen_floor()), an offload
 * m/b.
 */
static double coop_lb(struct tp_policy *pol, const struct tp_tensor *t,
		      uint64_t now)
{
	double b = tp_bw_get(&pol->bw, pol->conf);
	double ce = tp_policy_regen_floor(pol, t);
	double co = b > 0 ? tp_filter_mem(t) / b : INFINITY;

	return cost_floor(ce < co ? ce : co) / staleness(t, now);
}

/* Candidate @c's h and way out, asked once; false: it cannot leave now. */
static bool cand_h(struct tp_policy *pol, struct coop_cand *c,
		   bool no_offload, uint64_t now)
{
	struct tp_director_in in;

	if (!c->state) {
		tp_policy_director_in(pol, c->t, no_offload, &in);
		c->state = -1;
		/* One that cannot leave now is a wall, like a pinned one. */
		if (tp_director_decide(tp_pol_director(pol), &in,
				       &c->how)) {
			c->h = coop_h(c->t, &in, c->how, now);
			if (!isinf(c->h))
				c->state = 1;
		}
	}
	return c->state > 0;
}

/* Windows gathered for the bounded search, with their bounds. */
struct gathered {
	struct coop_win *w;
	size_t n;
};

static void gather(void *priv, size_t lo, size_t hi, double sum)
{
	struct gathered *g = priv;

	g->w[g->n++] = (struct coop_win){ .lo = lo, .hi = hi, .lb = sum };
}

/*
 * The exact sum of window @w, in tp_coop_window()'s order of addition;
 * INFINITY when a member cannot leave.
 */
static double window_h(const struct tp_coop_seg *seg, const struct coop_win *w,
		       double (*h)(void *priv, const struct tp_coop_seg *s),
		       void *priv)
{
	double sum = 0;

	for (size_t i = w->lo; i <= w->hi; i++) {
		double x = seg[i].cand ? h(priv, &seg[i]) : 0;

		if (isinf(x))
			return INFINITY;
		sum += x;
	}
	return sum;
}

int tp_coop_window_bounded(const struct tp_coop_seg *seg, size_t nseg,
			   size_t n,
			   double (*h)(void *priv, const struct tp_coop_seg *s),
			   void *priv, size_t *lo, size_t *hi, double *cost)
{
	struct coop_win *w = malloc((nseg ? nseg : 1) * sizeof(*w));
	struct gathered g = { w, 0 };
	const struct coop_win *best = NULL;
	double best_h = INFINITY;
	size_t nw;

	if (!w)
		return -ENOMEM;
	if (n)
		each_window(seg, nseg, n, gather, &g);
	nw = g.n;
	/*
	 * Cheapest bound first: a window whose bound exceeds the best exact
	 * sum found cannot win, nor can any after it. Equal sums go to the
	 * window ending first, as tp_coop_window() takes them.
	 */
	qsort(w, nw, sizeof(*w), by_bound);
	for (size_t k = 0; k < nw && w[k].lb <= best_h; k++) {
		double x = window_h(seg, &w[k], h, priv);

		if (x < best_h || (x == best_h && best && w[k].hi < best->hi)) {
			best = &w[k];
			best_h = x;
		}
	}
	if (best && !isinf(best_h)) {
		*lo = best->lo;
		*hi = best->hi;
		*cost = best_h;
	}
	free(w);
	return best && !isinf(best_h) ? 0 : -ENOENT;
}

/* What tp_coop_choose() asks the bounded search. */
struct choice {
	struct tp_policy *pol;
	struct coop_cand *cands;
	bool no_offload;
	uint64_t now;
};

static double seg_h(void *priv, const struct tp_coop_seg *s)
{
	struct choice *ch = priv;
	struct coop_cand *c = &ch->cands[s->cand - 1];

	return cand_h(ch->pol, c, ch->no_offload, ch->now) ? c->h : INFINITY;
}

int tp_coop_choose(struct tp_policy *pol, size_t need_bytes, bool no_offload,
		   struct tp_tensor **victim, enum tp_leave *how)
{
	const struct tp_vmm *vmm = pol->vmm;
	size_t n = (need_bytes + vmm->granularity - 1) / vmm->granularity;
	size_t slots = tp_pol_index_slots(pol->idx), nc = 0, lo, hi;
	struct seg_list l = { 0 };
	struct coop_cand *cands;
	uint64_t now = tp_policy_now(pol);
	struct choice ch = { pol, NULL, no_offload, now };
	double cost;
	int rc = -ENOENT;

	cands = calloc(slots ? slots : 1, sizeof(*cands));
	if (!cands)
		return -ENOMEM;
	ch.cands = cands;
	tp_vmm_free_runs(vmm, add_free, &l);
	for (size_t i = 0; i < slots; i++) {
		struct tp_tensor *t = tp_pol_index_at(pol->idx, i);
		struct coop_cand *c = &cands[nc];

		if (!t || t->pins || !t->resident_pages)
			continue;
		c->t = t;
		l.h = coop_lb(pol, t, now);
		l.cand = ++nc;
		tp_pager_chunk_runs(t, add_tensor_run, &l);
	}
	if (l.oom) {
		rc = -ENOMEM;
		goto out;
	}
	qsort(l.v, l.n, sizeof(*l.v), by_start);
	rc = tp_coop_window_bounded(l.v, l.n, n, seg_h, &ch, &lo, &hi, &cost);
	if (rc)
		goto out;
	rc = -ENOENT;
	for (size_t i = lo; i <= hi; i++) {
		if (!l.v[i].cand)
			continue;
		*victim = l.v[i].t;
		*how = cands[l.v[i].cand - 1].how;
		rc = 0;
		break;
	}
out:
	free(cands);
	free(l.v);
	return rc;
}

void tp_coop_place(struct tp_policy *pol, struct tp_tensor *t)
{
	struct tp_coop_part *p = &pol->coop;
	double c, m, d;

	t->pol.right = false;
	if (tp_filter_traits(tp_pol_filter(pol))->choice !=
	    TP_FILTER_CHOOSE_WINDOW || !pol->vmm ||
	    !tp_vmm_pool_contiguous(pol->vmm) ||
	    t->resident_pages == t->nr_pages)
		return;
	c = tp_policy_cost(pol, t);
	m = (double)t->bytes;
	/* Uncomputable tensors are the expensive kind: left. */
	if (isinf(c) || m <= 0)
		return;
	/* Coop §3.4: cost density = computational cost / memory size. */
	d = log((c < TP_FILTER_MIN_COST_NS ? TP_FILTER_MIN_COST_NS : c) / m);
	t->pol.right = p->n && d < p->log_sum / (double)p->n;
	p->log_sum += d;
	p->n++;
}
