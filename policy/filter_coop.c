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

bool tp_coop_window(const struct tp_coop_seg *seg, size_t nseg, size_t n,
		    size_t *lo, size_t *hi, double *cost)
{
	size_t l = 0, len = 0;
	double sum = 0, best = INFINITY;
	bool found = false;

	for (size_t r = 0; r < nseg; r++) {
		/* A gap (a chunk that cannot leave) closes every window. */
		if (r && seg[r - 1].start + seg[r - 1].len != seg[r].start) {
			l = r;
			len = 0;
			sum = 0;
		}
		len += seg[r].len;
		sum += seg[r].h;
		while (l < r && len - seg[l].len >= n) {
			len -= seg[l].len;
			sum -= seg[l].h;
			l++;
		}
		if (len < n)
			continue;
		/* The running sum drifts: compare exact sums. */
		sum = 0;
		for (size_t i = l; i <= r; i++)
			sum += seg[i].h;
		if (!found || sum < best) {
			found = true;
			best = sum;
			*lo = l;
			*hi = r;
		}
	}
	if (found)
		*cost = best;
	return found;
}

struct seg_list {
	struct tp_coop_seg *v;
	size_t n, cap;
	bool oom;
	/* what the tensor being added brings */
	double h;
	enum tp_leave how;
};

static void seg_push(struct seg_list *l, struct tp_tensor *t, size_t start,
		     size_t len, double h, enum tp_leave how)
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
		.start = start, .len = len, .h = h, .t = t, .how = how,
	};
}

static void add_free(void *arg, size_t start, size_t len)
{
	seg_push(arg, NULL, start, len, 0, TP_LEAVE_EVICT);
}

static void add_tensor_run(void *arg, const struct tp_tensor *t, size_t start,
			   size_t len)
{
	struct seg_list *l = arg;

	seg_push(l, (struct tp_tensor *)t, start, len, l->h, l->how);
}

static int by_start(const void *a, const void *b)
{
	const struct tp_coop_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Coop §3.3: h = c/s, c the cost of the way the director sends it away. */
static double coop_h(struct tp_policy *pol, const struct tp_tensor *t,
		     const struct tp_director_in *in, enum tp_leave how,
		     uint64_t now)
{
	double s = now > t->last_access_ns ?
		   (double)(now - t->last_access_ns) : 1;
	double c = how == TP_LEAVE_EVICT ? in->c_r :
		   (in->b > 0 ? in->m / in->b : INFINITY);

	(void)pol;
	if (c < TP_FILTER_MIN_COST_NS)
		c = TP_FILTER_MIN_COST_NS;
	return c / s;
}

int tp_coop_choose(struct tp_policy *pol, size_t need_bytes, bool no_offload,
		   struct tp_tensor **victim, enum tp_leave *how)
{
	const struct tp_vmm *vmm = pol->vmm;
	size_t n = (need_bytes + vmm->granularity - 1) / vmm->granularity;
	size_t slots = tp_pol_index_slots(pol->idx), lo, hi;
	struct seg_list l = { 0 };
	uint64_t now = tp_policy_now(pol);
	double cost;
	int rc = -ENOENT;

	tp_vmm_free_runs(vmm, add_free, &l);
	for (size_t i = 0; i < slots; i++) {
		struct tp_tensor *t = tp_pol_index_at(pol->idx, i);
		struct tp_director_in in;

		if (!t || t->pins || !t->resident_pages)
			continue;
		tp_policy_director_in(pol, t, no_offload, &in);
		/* One that cannot leave now is a wall, like a pinned one. */
		if (!tp_director_decide(pol->conf->policy_director, &in, &l.how))
			continue;
		l.h = coop_h(pol, t, &in, l.how, now);
		if (isinf(l.h))
			continue;
		tp_pager_chunk_runs(t, add_tensor_run, &l);
	}
	if (l.oom) {
		rc = -ENOMEM;
		goto out;
	}
	qsort(l.v, l.n, sizeof(*l.v), by_start);
	if (!n || !tp_coop_window(l.v, l.n, n, &lo, &hi, &cost))
		goto out;
	for (size_t i = lo; i <= hi; i++) {
		if (!l.v[i].t)
			continue;
		*victim = l.v[i].t;
		*how = l.v[i].how;
		rc = 0;
		break;
	}
out:
	free(l.v);
	return rc;
}

void tp_coop_place(struct tp_policy *pol, struct tp_tensor *t)
{
	struct tp_coop_part *p = &pol->coop;
	double c, m, d;

	t->pol.right = false;
	if (tp_filter_traits(pol->conf->policy_filter)->choice !=
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
