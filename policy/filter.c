/* SPDX-License-Identifier: MIT */
/* The filter heuristics (DELTA eq. 1-3, DTR, Capuchin's MSPS, Coop) as keys. */
#include "config.h"

#include <math.h>

#include "policy/filter.h"

/*
 * One filter of policy.filter: its value as a line, and its paper's score
 * num/den. @m is m(t), @s the staleness, @c c_r with its floor (INFINITY
 * when @t cannot be regenerated). The table below is the only place a
 * filter's kind is looked at.
 */
struct filter {
	struct tp_filter_traits traits;
	/* The key's slope k and value g at its origin (g is 0 on entry). */
	void (*line)(double m, double c, struct tp_pol_key *key);
	/* num (1 on entry) and den of the score. */
	void (*score)(double m, double s, double c, double *num, double *den);
};

/* DELTA eq. 1: h = 1/(m*s), so value = m*s */
static void delta_line(double m, double c, struct tp_pol_key *key)
{
	key->k = m;
}

static void delta_score(double m, double s, double c, double *num,
			double *den)
{
	*den = m * s;
}

/* DELTA eq. 2: h = 1/s, so value = s */
static void lru_line(double m, double c, struct tp_pol_key *key)
{
	key->k = 1;
}

static void lru_score(double m, double s, double c, double *num,
		      double *den)
{
	*den = s;
}

/* DELTA eq. 3: h = 1/m, so value = m, constant in time */
static void greedy_line(double m, double c, struct tp_pol_key *key)
{
	key->k = 0;
	key->g = m;
}

static void greedy_score(double m, double s, double c, double *num,
			 double *den)
{
	*den = m;
}

/*
 * DTR: h = c(e*(t))/(m*s), so value = (m/c)*s; c is the compute of the
 * whole evicted neighbourhood (victim.c); uncomputable: c = inf
 */
static void dtr_line(double m, double c, struct tp_pol_key *key)
{
	key->k = isinf(c) ? 0 : m / c;
}

/* DTR: c/(m*s); overlap's x/(m*d) when nothing is predicted (d = s) and
 * the director evicts (x = c) */
static void dtr_score(double m, double s, double c, double *num,
		      double *den)
{
	*num = c;
	*den = m * s;
}

/* Capuchin MSPS = m/c (memory saved per second of recompute) */
static void msps_line(double m, double c, struct tp_pol_key *key)
{
	key->k = 0;
	key->g = isinf(c) ? 0 : m / c;
}

/* Capuchin: 1/MSPS = c/m */
static void msps_score(double m, double s, double c, double *num,
		       double *den)
{
	*num = c;
	*den = m;
}

/* Coop §3.3: h = c/s (memory is in the layout), value = s/c */
static void coop_line(double m, double c, struct tp_pol_key *key)
{
	key->k = isinf(c) ? 0 : 1 / c;
}

static void coop_score(double m, double s, double c, double *num,
		       double *den)
{
	*num = c;
	*den = s;
}

/* Not a line (filter_overlap.c scores afresh); the index only holds the
 * candidates. */
static void overlap_line(double m, double c, struct tp_pol_key *key)
{
	key->k = 0;
	key->g = m;
}

static const struct filter filter_delta = {
	.line = delta_line, .score = delta_score,
};
static const struct filter filter_lru = {
	.line = lru_line, .score = lru_score,
};
static const struct filter filter_greedy = {
	.line = greedy_line, .score = greedy_score,
};
static const struct filter filter_dtr = {
	/* DTR's h ranks by its whole evicted neighbourhood (eq. 1). */
	.traits = { .cost = TP_FILTER_COST_EVICTED },
	.line = dtr_line, .score = dtr_score,
};
static const struct filter filter_msps = {
	.traits = { .cost = TP_FILTER_COST_RECOMPUTE },
	.line = msps_line, .score = msps_score,
};
static const struct filter filter_coop = {
	.traits = {
		.cost = TP_FILTER_COST_RECOMPUTE,
		.choice = TP_FILTER_CHOOSE_WINDOW,
	},
	.line = coop_line, .score = coop_score,
};
static const struct filter filter_overlap = {
	.traits = {
		.choice = TP_FILTER_CHOOSE_AFRESH,
		.next_use = true,
		.demand_only = true,
	},
	.line = overlap_line, .score = dtr_score,
};

/* policy.filter's values (ctl/conf.h's enum tp_filter_kind). */
static const struct filter *const filters[] = {
	[TP_FILTER_DELTA] = &filter_delta,
	[TP_FILTER_LRU] = &filter_lru,
	[TP_FILTER_GREEDY] = &filter_greedy,
	[TP_FILTER_DTR] = &filter_dtr,
	[TP_FILTER_MSPS] = &filter_msps,
	[TP_FILTER_COOP] = &filter_coop,
	[TP_FILTER_OVERLAP] = &filter_overlap,
};

/* Filter @kind; DELTA's for a kind the table does not know. */
static const struct filter *filter_of(int kind)
{
	if (kind < 0 || (size_t)kind >= sizeof(filters) / sizeof(*filters) ||
	    !filters[kind])
		return &filter_delta;
	return filters[kind];
}

double tp_filter_mem(const struct tp_tensor *t)
{
	if (!t->nr_pages || t->resident_pages >= t->nr_pages)
		return (double)t->bytes;
	return (double)t->bytes * (double)t->resident_pages /
	       (double)t->nr_pages;
}

const struct tp_filter_traits *tp_filter_traits(int kind)
{
	return &filter_of(kind)->traits;
}

bool tp_filter_uses_cost(int kind)
{
	return filter_of(kind)->traits.cost != TP_FILTER_COST_NONE;
}

static double cost_floor(double c_r)
{
	return c_r < TP_FILTER_MIN_COST_NS ? TP_FILTER_MIN_COST_NS : c_r;
}

void tp_filter_key(int kind, const struct tp_tensor *t, double c_r,
		   struct tp_pol_key *key)
{
	double m = tp_filter_mem(t);
	double c = cost_floor(c_r);

	key->a = t->last_access_ns;
	key->c = c_r;
	key->m = m;
	key->g = 0;
	filter_of(kind)->line(m, c, key);
}

double tp_filter_score(int kind, const struct tp_tensor *t, double c_r,
		       uint64_t now)
{
	double m = tp_filter_mem(t);
	double s = now > t->last_access_ns ?
		   (double)(now - t->last_access_ns) : 0;
	double c = cost_floor(c_r);
	double num = 1, den;

	filter_of(kind)->score(m, s, c, &num, &den);
	if (isinf(num) || den <= 0)
		return INFINITY;
	return num / den;
}
