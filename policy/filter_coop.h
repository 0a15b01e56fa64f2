/* SPDX-License-Identifier: MIT */
/*
 * Coop (policy.filter = coop): the sliding window over the address-ordered
 * pool (Coop §3.3) and cheap-tensor partitioning (§3.4), on the contiguous
 * pool (vmm.mode = contiguous). On the chunked pool coop is only its
 * h = c/s ordering (filter.c): there every free chunk is as good as any.
 */
#ifndef TP_POLICY_FILTER_COOP_H
#define TP_POLICY_FILTER_COOP_H

#include <stdbool.h>
#include <stddef.h>

#include "pager/hooks.h"
#include "pager/tensor.h"

struct tp_policy;

/* One element of the address-ordered list: a free run (t NULL, h 0) or a
 * run of chunks of a tensor that may leave, with its h = c/s (or a bound
 * under it, tp_coop_window_bounded()). */
struct tp_coop_seg {
	size_t start;		/* first chunk index */
	size_t len;		/* chunks */
	double h;		/* Coop §3.3: c(t)/s(t); 0 for free runs */
	struct tp_tensor *t;
	size_t cand;		/* tp_coop_choose()'s candidate + 1; 0 none */
};

/* Cheap-tensor partitioning state: the running mean of log cost density. */
struct tp_coop_part {
	double log_sum;
	uint64_t n;
};

/**
 * tp_coop_window() - Coop §3.3: among the windows of @seg (sorted by
 * start) whose segments are address-adjacent with no gap, the one covering
 * at least @n chunks with the smallest sum of h. Two pointers, O(@nseg):
 * h >= 0, so for each right end the cheapest window is the shortest.
 * @lo, @hi: set to the window's first and last segment.
 * @cost:   set to its sum of h.
 * Return: true, or false when no window covers @n.
 */
bool tp_coop_window(const struct tp_coop_seg *seg, size_t nseg, size_t n,
		    size_t *lo, size_t *hi, double *cost);

/**
 * tp_coop_window_bounded() - tp_coop_window()'s answer, ties included,
 * where each segment's h is a lower bound and @h(@priv, segment) the exact
 * h of a segment of a tensor (cand != 0; INFINITY: it cannot leave, a
 * wall), asked only for the members of windows whose bound the best
 * exact sum so far does not exceed, cheapest bound first.
 * Return: 0 with @lo, @hi and @cost set; -ENOENT when no window of
 * members that can leave covers @n; -ENOMEM.
 */
int tp_coop_window_bounded(const struct tp_coop_seg *seg, size_t nseg,
			   size_t n,
			   double (*h)(void *priv, const struct tp_coop_seg *s),
			   void *priv, size_t *lo, size_t *hi, double *cost);

/**
 * tp_coop_choose() - the victim on a contiguous pool: the first tensor of
 * the cheapest window of @need_bytes (free runs count for nothing), with
 * how it leaves as the director says. Each call recomputes the window, so
 * the members of one window leave in turn as the pager calls again. The
 * window is tp_coop_window()'s, ties included; c(t), a walk over the
 * evicted neighbourhood, is computed only for the members of windows that
 * a lower bound (the op that made t alone) does not rule out.
 * Return: 0, -ENOENT when no window fits, -ENOMEM.
 */
int tp_coop_choose(struct tp_policy *pol, size_t need_bytes, bool no_offload,
		   struct tp_tensor **victim, enum tp_leave *how);

/**
 * tp_coop_place() - Coop §3.4: before @t is backed, send it to the pool's
 * right end (t->pol.right) when its cost density c_r/m is under the
 * geometric mean of the densities seen so far, else to the left end.
 * Only with policy.filter = coop on a contiguous pool; else left.
 */
void tp_coop_place(struct tp_policy *pol, struct tp_tensor *t);

#endif /* TP_POLICY_FILTER_COOP_H */
