/* SPDX-License-Identifier: MIT */
/*
 * Evaluating a sim cost profile: per-handle driver costs between the
 * measured sizes, and op times from their work.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vmm/sim_profile.h"

static double cost_of(const struct tp_sim_handle_cost *h,
		      enum tp_sim_driver_call call)
{
	switch (call) {
	case TP_SIM_CREATE:
		return h->create_ns;
	case TP_SIM_MAP:
		return h->map_ns;
	case TP_SIM_SET_ACCESS:
		return h->set_access_ns;
	case TP_SIM_UNMAP:
		return h->unmap_ns;
	default:
		return h->release_ns;
	}
}

uint64_t tp_sim_handle_ns(const struct tp_sim_profile *p,
			  enum tp_sim_driver_call call, uint64_t bytes)
{
	const struct tp_sim_handle_cost *a, *b;
	double x, ya, yb, f;
	size_t i;

	if (p->nr_handle == 1 || bytes <= p->handle[0].bytes)
		return (uint64_t)cost_of(&p->handle[0], call);
	/* The segment around @bytes, or the last one beyond the table. */
	for (i = 1; i + 1 < p->nr_handle && p->handle[i].bytes < bytes; i++)
		;
	a = &p->handle[i - 1];
	b = &p->handle[i];
	ya = cost_of(a, call);
	yb = cost_of(b, call);
	x = log((double)bytes);
	f = (x - log((double)a->bytes)) /
	    (log((double)b->bytes) - log((double)a->bytes));
	/* Costs are positive: interpolate their logarithms. */
	if (ya > 0 && yb > 0)
		return (uint64_t)llround(exp(log(ya) + f * (log(yb) - log(ya))));
	return (uint64_t)llround(fmax(0, ya + f * (yb - ya)));
}

uint64_t tp_sim_op_ns(const struct tp_sim_profile *p, const char *name,
		      double flops, double bytes)
{
	const struct tp_sim_op_cost *c = &p->other;
	double ns;

	for (size_t i = 0; i < p->nr_ops; i++) {
		if (!strcmp(p->ops[i].name, name)) {
			c = &p->ops[i];
			break;
		}
	}
	ns = c->launch_ns;
	if (c->flops_per_ns > 0)
		ns += flops / c->flops_per_ns;
	if (c->bytes_per_ns > 0)
		ns += bytes / c->bytes_per_ns;
	return (uint64_t)llround(ns);
}

uint64_t tp_sim_issue_ns(const struct tp_sim_profile *p, const char *name)
{
	for (size_t i = 0; name && i < p->nr_issue; i++)
		if (!strcmp(p->issue[i].name, name))
			return p->issue[i].issue_ns;
	return p->issue_ns;
}
