/* SPDX-License-Identifier: MIT */
/*
 * The paging work bound (pager.work_limit). The policy and lineage
 * decide what paging does; this only makes sure that decisions which feed
 * each other without end (a regeneration whose room-making evicts what it
 * is about to read, a policy that keeps choosing a victim that cannot
 * leave) end with TP_EWORK instead of a spin.
 *
 * A unit of paging work is an op replayed by lineage (a regeneration, or
 * a part of an op run in parts), a victim chosen, a candidate the policy
 * scored to choose it, or a copy started: a choice costs what its filter
 * looks at, so that a filter scoring every candidate is stopped as soon,
 * in time, as one that samples. Units are charged to the request under
 * way (the outermost acquire, room-making or tp_op_run) and, between
 * tp_iteration_begin() and tp_iteration_end(), to the iteration.
 *
 * What a request can legitimately do grows with the tensors alive: a
 * regeneration replays each record it needs about once, making room
 * sends each candidate away about once, and a choice scores at most every
 * candidate. So a request may do pager.work_limit units per tensor alive
 * (TP_WORK_FLOOR tensors at least). Lineage's own retry, a regeneration
 * that lets its pins go (at most TP_LIN_MAX_DROPS times), starts the
 * request's count afresh; the iteration, which may do as much per request
 * on average, counts the retries too.
 */
#include <inttypes.h>

#include "config.h"
#include "pager/pager_int.h"

/* Tensors a request is granted work for, however few are alive. */
#define TP_WORK_FLOOR	64

void tp_pager_work_begin(struct tp_pager *pg)
{
	if (pg->work.depth++)
		return;
	pg->work.req = 0;
	pg->work.reqs++;
	pg->work.over = false;
}

void tp_pager_work_end(struct tp_pager *pg)
{
	pg->work.depth--;
}

void tp_pager_work_retry(struct tp_pager *pg)
{
	pg->work.req = 0;
}

void tp_pager_work_iteration(struct tp_pager *pg, bool begin)
{
	pg->work.in_iter = begin;
	pg->work.iter = 0;
	pg->work.reqs = 0;
	pg->work.recompute0 = pg->c.recompute_ns;
}

static uint64_t tensors(const struct tp_pager *pg)
{
	return pg->tensors_live > TP_WORK_FLOOR ? pg->tensors_live :
						  TP_WORK_FLOOR;
}

uint64_t tp_pager_iter_recompute_ns(const struct tp_pager *pg)
{
	return pg->c.recompute_ns - pg->work.recompute0;
}

int tp_pager_work(struct tp_pager *pg, unsigned units, bool demand)
{
	uint64_t limit = (uint64_t)pg->conf.work_limit;
	uint64_t reqs = pg->work.reqs ? pg->work.reqs : 1;
	bool req_over, iter_over;

	if (pg->work.depth)
		pg->work.req += units;
	pg->work.iter += units;
	if (!limit)
		return 0;
	req_over = pg->work.req > limit * tensors(pg);
	iter_over = pg->work.in_iter &&
		    pg->work.iter > limit * tensors(pg) * reqs;
	if (!req_over && !iter_over && !pg->work.over)
		return 0;
	/* Work ahead of need stops quietly; a demand's failure is said. */
	if (!demand || pg->work.over)
		return -TP_EWORK;
	/* What the request does on its way out fails too. */
	pg->work.over = pg->work.depth > 0;
	if (req_over)
		tp_pager_error(pg, -TP_EWORK,
			       "pager: one request did %" PRIu64 " units of paging work (replays, victims, candidates scored, copies), over pager.work_limit = %" PRIu64 " per tensor alive (%" PRIu64 ")",
			       pg->work.req, limit, tensors(pg));
	else
		tp_pager_error(pg, -TP_EWORK,
			       "pager: this iteration did %" PRIu64 " units of paging work in %" PRIu64 " requests, over pager.work_limit = %" PRIu64 " per tensor alive (%" PRIu64 ") and request",
			       pg->work.iter, reqs, limit, tensors(pg));
	return -TP_EWORK;
}
