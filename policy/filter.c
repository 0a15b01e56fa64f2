/* SPDX-License-Identifier: MIT */
/* The filter heuristics (DELTA eq. 1-3, DTR, Capuchin's MSPS, Coop) as keys. */
#include "config.h"

#include <math.h>

#include "policy/filter.h"

double tp_filter_mem(const struct tp_tensor *t)
{
	if (!t->nr_pages || t->resident_pages >= t->nr_pages)
		return (double)t->bytes;
	return (double)t->bytes * (double)t->resident_pages /
	       (double)t->nr_pages;
}

bool tp_filter_uses_cost(int kind)
{
	return kind == TP_FILTER_DTR || kind == TP_FILTER_MSPS ||
	       kind == TP_FILTER_COOP;
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
	switch (kind) {
	case TP_FILTER_LRU:
		/* DELTA eq. 2: h = 1/s, so value = s */
		key->k = 1;
		break;
	case TP_FILTER_GREEDY:
		/* DELTA eq. 3: h = 1/m, so value = m, constant in time */
		key->k = 0;
		key->g = m;
		break;
	case TP_FILTER_DTR:
		/* DTR: h = c(e*(t))/(m*s), so value = (m/c)*s; c is the
		 * compute of the whole evicted neighbourhood (victim.c);
		 * uncomputable: c = inf */
		key->k = isinf(c) ? 0 : m / c;
		break;
	case TP_FILTER_MSPS:
		/* Capuchin MSPS = m/c (memory saved per second of recompute) */
		key->k = 0;
		key->g = isinf(c) ? 0 : m / c;
		break;
	case TP_FILTER_COOP:
		/* Coop §3.3: h = c/s (memory is in the layout), value = s/c */
		key->k = isinf(c) ? 0 : 1 / c;
		break;
	case TP_FILTER_OVERLAP:
		/* Not a line (filter_overlap.c scores afresh); the index
		 * only holds the candidates. */
		key->k = 0;
		key->g = m;
		break;
	case TP_FILTER_DELTA:
	default:
		/* DELTA eq. 1: h = 1/(m*s), so value = m*s */
		key->k = m;
		break;
	}
}

double tp_filter_score(int kind, const struct tp_tensor *t, double c_r,
		       uint64_t now)
{
	double m = tp_filter_mem(t);
	double s = now > t->last_access_ns ?
		   (double)(now - t->last_access_ns) : 0;
	double c = cost_floor(c_r);
	double num = 1, den;

	switch (kind) {
	case TP_FILTER_LRU:
		den = s;			/* DELTA eq. 2 */
		break;
	case TP_FILTER_GREEDY:
		den = m;			/* DELTA eq. 3 */
		break;
	case TP_FILTER_DTR:
	case TP_FILTER_OVERLAP:
		/* DTR: c/(m*s); overlap's x/(m*d) when nothing is predicted
		 * (d = s) and the director evicts (x = c) */
		num = c;
		den = m * s;
		break;
	case TP_FILTER_MSPS:
		num = c;			/* Capuchin: 1/MSPS = c/m */
		den = m;
		break;
	case TP_FILTER_COOP:
		num = c;			/* Coop §3.3: c/s */
		den = s;
		break;
	case TP_FILTER_DELTA:
	default:
		den = m * s;			/* DELTA eq. 1 */
		break;
	}
	if (isinf(num) || den <= 0)
		return INFINITY;
	return num / den;
}
