/* SPDX-License-Identifier: MIT */
/*
 * A kinetic tournament over the candidates' lines (see index.h).
 *
 * Why it is exact: a node is "consistent" when its winner has the largest
 * value at idx->now among the winners of its children, and its certificate
 * fail time is when the loser's line overtakes the winner's (never, if the
 * loser is not steeper). Both lines are linear, so the winner stays ahead
 * until exactly that time. Invariant: every node is consistent at idx->now
 * and every fail time is > idx->now. Advancing to a later now revisits
 * exactly the nodes whose subtree holds a fail time <= now (min_fail),
 * children first, which restores the invariant; a leaf update revisits its
 * path. So the root holds the maximum at now. Between two lines the order
 * changes at most once, so the work is amortised O(log^2 n) per operation
 * (kinetic tournament bound) and nothing happens for filters whose lines
 * are parallel (lru, greedy, msps).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/index.h"

struct leaf {
	struct tp_tensor *t;
	struct tp_pol_key key;
};

/* The winner's line is copied into its nodes: a comparison then reads
 * two adjacent nodes instead of two random leaves. */
struct node {
	int32_t win;		/* slot of the winner, -1: empty subtree */
	double k, g;		/* the winner's line ... */
	uint64_t a;		/* ... k * (now - a) + g */
	double fail;		/* when this node's certificate fails */
	double min_fail;	/* smallest fail time in the subtree */
};

struct tp_pol_index {
	size_t n;		/* candidates */
	size_t slots;		/* slots in use or holes: [0, slots) */
	size_t cap;		/* slots allocated (power of two) */
	struct leaf *leaf;	/* .t == NULL: a hole */
	size_t *holes;		/* stack of holes below slots */
	size_t nholes;
	struct node *node;	/* 2*cap: 1..cap-1 internal, cap.. leaves */
	uint64_t now;
	bool exact;		/* exact queries wanted (not sampling) */
	bool tree;		/* tournament maintained */
	enum tp_pol_index_mode mode;
	bool scanning;		/* auto mode chose the linear scan */
	/* work in the current window of queries, for the auto mode */
	uint64_t queries, updates, refreshes;
};

/*
 * Relative costs of one node refresh of the tournament (a comparison, a
 * division, scattered memory) and of one candidate in a linear scan (a
 * multiply-add over a dense array), and the queries between choices.
 */
#define COST_REFRESH	10
#define COST_SCAN	1
#define WINDOW		32

#define INITIAL_CAP 64

struct tp_pol_index *tp_pol_index_create(void)
{
	struct tp_pol_index *idx = calloc(1, sizeof(*idx));

	if (!idx)
		return NULL;
	idx->cap = INITIAL_CAP;
	idx->leaf = calloc(idx->cap, sizeof(*idx->leaf));
	idx->node = malloc(2 * idx->cap * sizeof(*idx->node));
	idx->holes = malloc(idx->cap * sizeof(*idx->holes));
	if (!idx->leaf || !idx->node || !idx->holes) {
		free(idx->leaf);
		free(idx->node);
		free(idx->holes);
		free(idx);
		errno = ENOMEM;
		return NULL;
	}
	idx->exact = true;
	idx->tree = true;
	tp_pol_index_rebuild(idx);
	return idx;
}

void tp_pol_index_destroy(struct tp_pol_index *idx)
{
	if (!idx)
		return;
	free(idx->leaf);
	free(idx->node);
	free(idx->holes);
	free(idx);
}

/* fmin() without the call into libm: fail times are never NaN. */
static inline double dmin(double a, double b)
{
	return a < b ? a : b;
}

static double node_value(const struct node *n, uint64_t now)
{
	return n->k * (double)(int64_t)(now - n->a) + n->g;
}

/* Recompute internal node @v from its children at idx->now. */
static void recompute(struct tp_pol_index *idx, size_t v)
{
	struct node *nd = &idx->node[v];
	const struct node *l = &idx->node[2 * v], *r = &idx->node[2 * v + 1];
	const struct node *w, *o;
	double vw, vo;

	nd->fail = INFINITY;
	if (l->win < 0 || r->win < 0) {
		w = l->win < 0 ? r : l;
		goto copy;
	}
	vw = node_value(l, idx->now);
	vo = node_value(r, idx->now);
	/* Ties go to the steeper line: it is ahead from now on. */
	if (vo > vw || (vo == vw && r->k > l->k)) {
		double tv = vw;

		w = r; o = l;
		vw = vo; vo = tv;
	} else {
		w = l; o = r;
	}
	if (o->k > w->k) {
		/* The loser gains ko - kw per ns and is vw - vo behind. */
		double d = (vw - vo) / (o->k - w->k);

		if (!(d >= 1))		/* rounding, or NaN from inf keys */
			d = isnan(d) ? INFINITY : 1;
		nd->fail = (double)idx->now + d;
	}
copy:
	nd->win = w->win;
	nd->k = w->k;
	nd->g = w->g;
	nd->a = w->a;
	nd->min_fail = dmin(nd->fail, dmin(l->min_fail, r->min_fail));
}

static void set_leaf_node(struct tp_pol_index *idx, size_t slot)
{
	struct node *nd = &idx->node[idx->cap + slot];
	const struct tp_pol_key *key = &idx->leaf[slot].key;

	nd->win = idx->leaf[slot].t ? (int32_t)slot : -1;
	nd->k = key->k;
	nd->g = key->g;
	nd->a = key->a;
	nd->fail = INFINITY;
	nd->min_fail = INFINITY;
}

/* Whether @v's winner is slot @a or @b. */
static bool is_changed(const struct tp_pol_index *idx, size_t v, size_t a,
		       size_t b)
{
	int32_t w = idx->node[v].win;

	return w >= 0 && ((size_t)w == a || (size_t)w == b);
}

/* What changed at a node, which decides how much its parent redoes. */
#define CH_WIN	1u	/* the winner (or its line): recompute the parent */
#define CH_MIN	2u	/* only the subtree minimum: refresh the parent's */

/*
 * Redo node @v: the whole comparison when @full (a child's winner moved
 * or @v's own certificate failed), else only its subtree minimum, since
 * the certificate depends on nothing but the two winners' lines.
 * Return what changed, for the parent.
 */
static unsigned refresh(struct tp_pol_index *idx, size_t v, bool full)
{
	struct node *nd = &idx->node[v];
	int32_t win = nd->win;
	double min_fail = nd->min_fail;

	idx->refreshes++;
	if (full)
		recompute(idx, v);
	else
		nd->min_fail = dmin(nd->fail, dmin(idx->node[2 * v].min_fail,
						   idx->node[2 * v + 1].min_fail));
	return (nd->win != win ? CH_WIN : 0) |
	       (nd->min_fail != min_fail ? CH_MIN : 0);
}

/*
 * Slots @a and @b (may be equal) changed: redo their paths to the root
 * together, sharing the nodes above where they meet, and stop as soon as
 * nothing changes any more. A winner that is a changed slot counts as a
 * changed winner: its line moved though its slot did not.
 */
static void fix_paths(struct tp_pol_index *idx, size_t a, size_t b)
{
	size_t va = idx->cap + a, vb = idx->cap + b;
	unsigned fa = CH_WIN, fb = CH_WIN;

	idx->updates++;
	if (!idx->tree)
		return;
	set_leaf_node(idx, a);
	if (b != a)
		set_leaf_node(idx, b);
	for (; va > 1; va >>= 1, vb >>= 1) {
		size_t pa = va >> 1, pb = vb >> 1;

		if (pa == pb) {
			fa |= fb;
			if (!fa)
				return;
			fa = fb = refresh(idx, pa, fa & CH_WIN) |
				  (is_changed(idx, pa, a, b) ? CH_WIN : 0);
			continue;
		}
		if (fa)
			fa = refresh(idx, pa, fa & CH_WIN) |
			     (is_changed(idx, pa, a, b) ? CH_WIN : 0);
		if (fb)
			fb = refresh(idx, pb, fb & CH_WIN) |
			     (is_changed(idx, pb, a, b) ? CH_WIN : 0);
		if (!fa && !fb)
			return;
	}
}

static void fix_path(struct tp_pol_index *idx, size_t slot)
{
	fix_paths(idx, slot, slot);
}

void tp_pol_index_rebuild(struct tp_pol_index *idx)
{
	if (!idx->tree)
		return;
	for (size_t s = 0; s < idx->cap; s++)
		set_leaf_node(idx, s);
	for (size_t v = idx->cap - 1; v; v--)
		recompute(idx, v);
	idx->refreshes += idx->cap;
}

/* Keep the tournament or not, as the search and the mode say. */
static void apply_mode(struct tp_pol_index *idx)
{
	bool tree = idx->exact && (idx->mode == TP_INDEX_TREE ||
				   (idx->mode == TP_INDEX_AUTO &&
				    !idx->scanning));

	idx->queries = idx->updates = idx->refreshes = 0;
	if (idx->tree == tree)
		return;
	idx->tree = tree;
	tp_pol_index_rebuild(idx);
}

void tp_pol_index_set_tree(struct tp_pol_index *idx, bool on)
{
	idx->exact = on;
	apply_mode(idx);
}

void tp_pol_index_set_mode(struct tp_pol_index *idx,
			   enum tp_pol_index_mode mode)
{
	idx->mode = mode;
	idx->scanning = mode == TP_INDEX_SCAN;
	apply_mode(idx);
}

/*
 * The auto mode's choice, once per WINDOW queries. The tournament's work
 * grows with the updates and the crossings between queries; a scan's with
 * the candidates per query. When queries are rare next to the changes
 * (many touches and a clock that moves far between decisions, as in a
 * training step with few evictions), a scan of the dense slots is the
 * cheaper exact answer. Switching needs a factor of two either way, and
 * the tournament's cost while scanning is a lower bound (updates times
 * the height, no crossings), so the two do not flap.
 */
static void reconsider(struct tp_pol_index *idx)
{
	double scan = (double)idx->queries * (double)idx->n * COST_SCAN;
	double height = log2((double)idx->cap);

	if (idx->tree) {
		if ((double)idx->refreshes * COST_REFRESH > 2 * scan) {
			idx->scanning = true;
			apply_mode(idx);
			return;
		}
	} else if (2 * (double)idx->updates * height * COST_REFRESH < scan) {
		idx->scanning = false;
		apply_mode(idx);
		return;
	}
	idx->queries = idx->updates = idx->refreshes = 0;
}

/* The largest value at idx->now by looking at every candidate. */
static struct tp_tensor *scan(const struct tp_pol_index *idx)
{
	const struct leaf *best = NULL;
	double bv = 0;

	for (size_t s = 0; s < idx->slots; s++) {
		const struct leaf *l = &idx->leaf[s];
		double v;

		if (!l->t)
			continue;
		v = tp_filter_value(&l->key, idx->now);
		if (!best || v > bv || (v == bv && l->key.k > best->key.k)) {
			best = l;
			bv = v;
		}
	}
	return best ? best->t : NULL;
}

/*
 * Double the index: leaves, holes and the tree, which share one capacity
 * and are rebuilt together (so not tp_array_grow()).
 */
static int grow(struct tp_pol_index *idx)
{
	size_t cap = idx->cap * 2;
	struct leaf *leaf = realloc(idx->leaf, cap * sizeof(*leaf));
	size_t *holes;
	struct node *node;

	if (!leaf)
		return -ENOMEM;
	idx->leaf = leaf;
	memset(leaf + idx->cap, 0, idx->cap * sizeof(*leaf));
	holes = realloc(idx->holes, cap * sizeof(*holes));
	if (!holes)
		return -ENOMEM;
	idx->holes = holes;
	node = malloc(2 * cap * sizeof(*node));
	if (!node)
		return -ENOMEM;	/* the larger leaf array is harmless */
	free(idx->node);
	idx->node = node;
	idx->cap = cap;
	tp_pol_index_rebuild(idx);
	return 0;
}

bool tp_pol_index_has(const struct tp_pol_index *idx,
		      const struct tp_tensor *t)
{
	int64_t s = t->pol.idx;

	return s >= 0 && (size_t)s < idx->slots && idx->leaf[s].t == t;
}

/*
 * Pack the candidates into [0, n) when holes outnumber them, so sampling
 * finds a candidate in two draws on average. Each compaction follows at
 * least slots/2 removals: amortised O(1) per removal.
 */
static void compact(struct tp_pol_index *idx)
{
	size_t to = 0;

	for (size_t s = 0; s < idx->slots; s++) {
		if (!idx->leaf[s].t)
			continue;
		if (s != to) {
			idx->leaf[to] = idx->leaf[s];
			idx->leaf[to].t->pol.idx = (int64_t)to;
			idx->leaf[s].t = NULL;
		}
		to++;
	}
	idx->slots = to;
	idx->nholes = 0;
	tp_pol_index_rebuild(idx);
}

int tp_pol_index_add(struct tp_pol_index *idx, struct tp_tensor *t,
		     const struct tp_pol_key *key)
{
	size_t s;

	if (tp_pol_index_has(idx, t)) {
		tp_pol_index_set_key(idx, (size_t)t->pol.idx, key);
		return 0;
	}
	if (idx->nholes) {
		s = idx->holes[--idx->nholes];
	} else {
		if (idx->slots == idx->cap && grow(idx))
			return -ENOMEM;
		s = idx->slots++;
	}
	idx->leaf[s].t = t;
	idx->leaf[s].key = *key;
	idx->n++;
	t->pol.idx = (int64_t)s;
	fix_path(idx, s);
	return 0;
}

bool tp_pol_index_del(struct tp_pol_index *idx, struct tp_tensor *t)
{
	size_t s;

	if (!tp_pol_index_has(idx, t))
		return false;
	s = (size_t)t->pol.idx;
	idx->leaf[s].t = NULL;
	t->pol.idx = -1;
	idx->n--;
	/* A removal leaves a hole, reused by the next add: one path. */
	if (s == idx->slots - 1)
		idx->slots--;
	else
		idx->holes[idx->nholes++] = s;
	if (idx->slots > INITIAL_CAP && idx->n * 2 < idx->slots)
		compact(idx);
	else
		fix_path(idx, s);
	return true;
}

void tp_pol_index_set_key(struct tp_pol_index *idx, size_t i,
			  const struct tp_pol_key *key)
{
	idx->leaf[i].key = *key;
	fix_path(idx, i);
}

/*
 * Replay the nodes under @v whose certificates failed by idx->now: the
 * failed node's comparison, and above it only what its changes require.
 */
static unsigned advance(struct tp_pol_index *idx, size_t v)
{
	unsigned f;

	if (v >= idx->cap || !(idx->node[v].min_fail <= (double)idx->now))
		return 0;
	f = advance(idx, 2 * v) | advance(idx, 2 * v + 1);
	return refresh(idx, v, (f & CH_WIN) ||
			       idx->node[v].fail <= (double)idx->now);
}

struct tp_tensor *tp_pol_index_top(struct tp_pol_index *idx, uint64_t now)
{
	struct tp_tensor *t;

	if (!idx->n)
		return NULL;
	if (now > idx->now)
		idx->now = now;
	if (idx->tree) {
		advance(idx, 1);
		t = idx->leaf[idx->node[1].win].t;
	} else {
		t = scan(idx);
	}
	if (idx->mode == TP_INDEX_AUTO && idx->exact &&
	    ++idx->queries >= WINDOW)
		reconsider(idx);
	return t;
}

size_t tp_pol_index_count(const struct tp_pol_index *idx)
{
	return idx->n;
}

size_t tp_pol_index_slots(const struct tp_pol_index *idx)
{
	return idx->slots;
}

struct tp_tensor *tp_pol_index_at(const struct tp_pol_index *idx, size_t i)
{
	return i < idx->slots ? idx->leaf[i].t : NULL;
}

const struct tp_pol_key *tp_pol_index_key(const struct tp_pol_index *idx,
					  size_t i)
{
	return &idx->leaf[i].key;
}
