/* SPDX-License-Identifier: MIT */
/*
 * The director: how a chosen tensor leaves (DELTA Alg. 3), and the
 * reload-or-recompute choice for one that comes back (DELTA §5.5).
 */
#ifndef TP_POLICY_DIRECTOR_H
#define TP_POLICY_DIRECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "pager/hooks.h"
#include "pager/tensor.h"

/* What the director needs to know about one tensor, in ns and bytes. */
struct tp_director_in {
	unsigned flags;		/* TP_EVICT_PINNED, TP_OFFLOAD_PINNED */
	bool computable;	/* lineage can regenerate it */
	double m;		/* bytes it frees */
	double cached;		/* of m, bytes the swap cache holds
				 * already: its offload copies m - cached */
	double c_r;		/* recompute cost, ns (INFINITY: cannot) */
	double b;		/* link bandwidth, bytes per ns */
	double remap_ns;	/* remap cost of its chunks, both actions */
	double anc_remap_ns;	/* remap cost of the evicted ancestors a
				 * regeneration maps again (c_r counts
				 * their compute only) */
	double hide_ns;		/* compute time a reload can overlap
				 * before the next use (delta-overlap) */
	double queued;		/* bytes of copies to host ahead of its
				 * own */
	bool no_offload;	/* host swap full */
	bool ahead;		/* leaving ahead of need (a watermark
				 * release): nothing waits for the copy out */
	bool no_reuse;		/* the record predicts no further use: it
				 * is neither regenerated nor reloaded
				 * (delta-overlap, filter overlap) */
	double reuse_ns;	/* time to its next use as the record
				 * predicts it (tp_prefetch_uses());
				 * 0: unknown (delta-overlap, overlap) */
};

/* Bytes an offload of @in copies out: m less what the swap cache holds. */
static inline double tp_director_out_bytes(const struct tp_director_in *in)
{
	return in->m > in->cached ? in->m - in->cached : 0;
}

/**
 * tp_director_decide() - DELTA Alg. 3 with tpager's fallbacks:
 * TP_EVICT_PINNED offloads, TP_OFFLOAD_PINNED evicts, an uncomputable
 * tensor offloads; otherwise director @kind decides (delta: F = c_r*b/m,
 * evict iff F <= 1; delta-overlap: the same with the swap cost reduced to
 * what compute cannot hide, TSPLIT eq. 3; evict / offload: fixed). When
 * the wanted action is impossible (swap full, cannot regenerate) the other
 * one is taken if allowed, except for the evict-only baseline, which never
 * offloads.
 *
 * Return: true with *@how set, or false when @in cannot leave now.
 */
bool tp_director_decide(int kind, const struct tp_director_in *in,
			enum tp_leave *how);

/**
 * tp_director_f() - the decision value F of @kind for @in: c_r*b/m
 * (DELTA eq. 4-6), or the overlap-aware ratio of delta-overlap.
 */
double tp_director_f(int kind, const struct tp_director_in *in);

/*
 * What the policy must know of a director beyond F, filled in by the
 * director's own table entry, so that nothing outside director.c asks
 * which director it is.
 */
struct tp_director_traits {
	/*
	 * Overlap-aware (delta-overlap): its costs count the ancestors'
	 * remaps and read the recorded next use; it wants partial eviction
	 * and split runs where they are left to the policy (auto), and the
	 * freed tensors that lineage keeps settled at once.
	 */
	bool overlap;
	/* Releases at demand only, as the evict-only baselines' papers do. */
	bool demand_only;
	/* Never offloads what the user did not pin against eviction: a
	 * tensor lineage cannot regenerate never leaves. */
	bool evicts_only;
};

/* tp_director_traits() - director @kind's (DELTA's for an unknown kind). */
const struct tp_director_traits *tp_director_traits(int kind);

/**
 * tp_director_exposed_ns() - what leaving by @how costs the steps that
 * wait, ns, in delta-overlap's cost model: an eviction its recompute
 * (c_r, DTR's e*), an offload the part of its copies compute does not
 * hide (TSPLIT eq. 3: the copy out behind those queued, unless @in is
 * ahead of need, and the copy back less what the compute before the next
 * use hides). Not the remap: every way out unmaps what it frees, so it
 * is the same per byte whichever tensor leaves and however. A tensor not
 * used again (@in->no_reuse) costs only its copy out.
 */
double tp_director_exposed_ns(const struct tp_director_in *in,
			      enum tp_leave how);

/**
 * tp_director_recompute_back() - DELTA §5.5: whether an offloaded tensor
 * is cheaper to recompute than to reload (m/b plus remap, minus what the
 * copy can hide) and can be recomputed. Never under @kind
 * TP_DIRECTOR_OFFLOAD: the swap-only baseline does not recompute what it
 * swapped out.
 */
bool tp_director_recompute_back(int kind, const struct tp_director_in *in);

#endif /* TP_POLICY_DIRECTOR_H */
