/* SPDX-License-Identifier: MIT */
/* Evict or offload: DELTA's decision function and the fixed baselines. */
#include "config.h"

#include <math.h>

#include "ctl/conf.h"
#include "policy/director.h"
#include "tpager.h"

/* One direction of a copy, less what compute hides (TSPLIT eq. 3 term). */
static double exposed(double m, double b, double hide)
{
	double t = m / b - hide;

	return t > 0 ? t : 0;
}

/*
 * The copy out: waited on by a demand, behind the copies queued; none
 * when the swap cache holds the contents already (the chunks then wait
 * for compute only).
 */
static double exposed_out(const struct tp_director_in *in)
{
	double out = tp_director_out_bytes(in);

	if (in->ahead || out <= 0)
		return 0;
	return exposed(in->queued + out, in->b, 0);
}

double tp_director_exposed_ns(const struct tp_director_in *in,
			      enum tp_leave how)
{
	if (how == TP_LEAVE_EVICT)
		return in->no_reuse ? 0 : in->c_r;
	return exposed_out(in) +
	       (in->no_reuse ? 0 : exposed(in->m, in->b, in->hide_ns));
}

/*
 * DELTA eq. 4-6: F = h_r/h_o = (c_r/(m*s)) / (1/(b*s)) = c_r*b/m, with the
 * bytes its offload copies (out) for the m of the swap cost m/b: an
 * offload the swap cache holds already costs nothing.
 */
static double delta_f(const struct tp_director_in *in)
{
	if (tp_director_out_bytes(in) <= 0)
		return INFINITY;
	return in->c_r * in->b / tp_director_out_bytes(in);
}

static double overlap_f(const struct tp_director_in *in)
{
	double c_s, den;

	/* Not used again: dropping it costs nothing, a copy does. */
	if (in->no_reuse)
		return 0;
	/*
	 * TSPLIT eq. 3: swap costs max(m/B - hidden, 0) each way. The copy
	 * out is waited on by the allocation that asked for room, behind the
	 * copies out already queued, so nothing hides it; the copy back
	 * overlaps the compute before the next use. A release ahead of need
	 * waits for neither.
	 * Remap of its own chunks is charged to both actions; an eviction
	 * also maps again the evicted ancestors its regeneration brings back
	 * first, which a reload does not (without them, bert at 9% of its
	 * peak made 2478 evictions instead of 338 and took 3.7x as long).
	 */
	c_s = exposed_out(in) + exposed(in->m, in->b, in->hide_ns);
	den = c_s + in->remap_ns;
	if (den <= 0)
		return INFINITY;
	return (in->c_r + in->anc_remap_ns + in->remap_ns) / den;
}

/*
 * One director of policy.director. The table below is the only place a
 * director's kind is looked at.
 */
struct director {
	/* F (evict iff F <= 1), for a tensor c_r and m are known of. */
	double (*f)(const struct tp_director_in *in);
	bool fixed;		/* always @way, whatever F says */
	enum tp_leave way;
	bool swaps;		/* may offload (unless told to by a pin) */
	bool recomputes;	/* may recompute what it swapped out */
	struct tp_director_traits traits;
};

static const struct director director_delta = {
	.f = delta_f, .swaps = true, .recomputes = true,
};
static const struct director director_delta_overlap = {
	.f = overlap_f, .swaps = true, .recomputes = true,
	.traits = { .overlap = true },
};
/* The evict-only baseline (DTR) never uses host swap. */
static const struct director director_evict = {
	.f = delta_f, .fixed = true, .way = TP_LEAVE_EVICT,
	.recomputes = true,
	.traits = { .demand_only = true, .evicts_only = true },
};
/* The swap-only baseline does not recompute what it swapped out. */
static const struct director director_offload = {
	.f = delta_f, .fixed = true, .way = TP_LEAVE_OFFLOAD, .swaps = true,
};

/* policy.director's values (ctl/conf.h's enum tp_director_kind). */
static const struct director *const directors[] = {
	[TP_DIRECTOR_DELTA] = &director_delta,
	[TP_DIRECTOR_DELTA_OVERLAP] = &director_delta_overlap,
	[TP_DIRECTOR_EVICT] = &director_evict,
	[TP_DIRECTOR_OFFLOAD] = &director_offload,
};

/* Director @kind; DELTA's for a kind the table does not know. */
static const struct director *director_of(int kind)
{
	if (kind < 0 ||
	    (size_t)kind >= sizeof(directors) / sizeof(*directors) ||
	    !directors[kind])
		return &director_delta;
	return directors[kind];
}

const struct tp_director_traits *tp_director_traits(int kind)
{
	return &director_of(kind)->traits;
}

double tp_director_f(int kind, const struct tp_director_in *in)
{
	if (isinf(in->c_r) || in->m <= 0)
		return INFINITY;
	return director_of(kind)->f(in);
}

bool tp_director_decide(int kind, const struct tp_director_in *in,
			enum tp_leave *how)
{
	const struct director *d = director_of(kind);
	bool can_evict = in->computable && !(in->flags & TP_EVICT_PINNED);
	bool can_offload = !(in->flags & TP_OFFLOAD_PINNED) && !in->no_offload;
	enum tp_leave want;

	/* DELTA Alg. 3: the pinning flags first, then uncomputable. */
	if (in->flags & TP_EVICT_PINNED)
		want = TP_LEAVE_OFFLOAD;
	else if (in->flags & TP_OFFLOAD_PINNED)
		want = TP_LEAVE_EVICT;
	else if (!in->computable)
		want = TP_LEAVE_OFFLOAD;
	else if (d->fixed)
		want = d->way;
	else	/* DELTA Alg. 3 line 7: evict iff s_d <= 1 */
		want = tp_director_f(kind, in) <= 1 ? TP_LEAVE_EVICT :
						      TP_LEAVE_OFFLOAD;

	if (!d->swaps && !(in->flags & TP_EVICT_PINNED))
		can_offload = false;

	if (want == TP_LEAVE_OFFLOAD && !can_offload)
		want = TP_LEAVE_EVICT;		/* swap full: evict instead */
	else if (want == TP_LEAVE_EVICT && !can_evict)
		want = TP_LEAVE_OFFLOAD;
	if ((want == TP_LEAVE_EVICT && !can_evict) ||
	    (want == TP_LEAVE_OFFLOAD && !can_offload))
		return false;
	*how = want;
	return true;
}

bool tp_director_recompute_back(int kind, const struct tp_director_in *in)
{
	if (!director_of(kind)->recomputes || !in->computable ||
	    isinf(in->c_r))
		return false;
	/* DELTA §5.5: recompute when it costs less than the reload. */
	return in->c_r + in->anc_remap_ns < exposed(in->m, in->b, in->hide_ns);
}
