/* SPDX-License-Identifier: MIT */
/*
 * Measuring an op's cost on a device without synchronising: a start and
 * an end event are recorded on the compute stream around the launch, and
 * the pair waits in a FIFO until the end event has completed. Pairs are
 * harvested at later launches (the compute stream completes in order, so
 * only the oldest needs a query) and their elapsed time folded into the
 * record's and the type's moving averages then. A record destroyed while
 * its pair is pending leaves the measurement to its type alone.
 *
 * Used only where launches are asynchronous (a native stream handle) and
 * the backend can time events; elsewhere the host clock or the charged
 * cost is exact at once (launch.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "lineage/lineage_int.h"
#include "vmm/vmm.h"

/* Pairs in flight at most; beyond that the oldest is waited for. */
#define TIMING_SLOTS	64u

struct tp_lin_pair {
	struct tp_event *start, *end;
	struct tp_lin_rec *rec;		/* NULL: fold into @ts alone */
	struct tp_lin_type *ts;
	bool recompute;
};

struct tp_lin_timing {
	struct tp_lin_pair slot[TIMING_SLOTS];
	unsigned head, count;		/* FIFO of pending pairs */
	bool claimable;			/* the newest pair awaits its owner */
	bool off;			/* backend cannot time events */
};

static struct tp_lin_timing *timing(struct tp_lineage *lin)
{
	struct tp_vmm *vmm = lin->vmm;

	if (!lin->timing) {
		lin->timing = calloc(1, sizeof(*lin->timing));
		if (!lin->timing)
			return NULL;
		/* Only asynchronous launches need it. */
		lin->timing->off = !tp_vmm_stream_handle(vmm, TP_STREAM_COMPUTE) ||
				   !vmm->ops->event_elapsed_ns;
	}
	return lin->timing->off ? NULL : lin->timing;
}

static void fold(struct tp_lineage *lin, struct tp_lin_pair *p, uint64_t ns)
{
	if (p->rec)
		tp_lin_note_cost(lin, p->rec, ns);
	else if (p->ts)
		tp_lin_note_type_cost(lin, p->ts, ns);
	if (p->recompute) {
		tp_pager_note_recompute(lin->pg, ns);
		lin->st.replay_ns += ns;
	} else {
		tp_pager_note_compute(lin->pg, ns);
	}
}

/* Harvest the oldest pair; @wait: sync its end event first. */
static int harvest_one(struct tp_lineage *lin, struct tp_lin_timing *tm,
		       bool wait)
{
	struct tp_vmm *vmm = lin->vmm;
	struct tp_lin_pair *p = &tm->slot[tm->head];
	uint64_t ns = 0;
	int ret;

	tp_vmm_wait_why("an op's timing");
	ret = wait ? tp_vmm_event_sync(vmm, p->end) :
		     tp_vmm_event_query(vmm, p->end);
	if (ret == -EAGAIN)
		return ret;
	if (!ret)
		ret = tp_vmm_event_elapsed_ns(vmm, p->start, p->end, &ns);
	if (ret == -EAGAIN && !wait)
		return ret;
	/* A pair that cannot be timed (a device error) is dropped. */
	if (!ret)
		fold(lin, p, ns);
	p->rec = NULL;
	p->ts = NULL;
	tm->head = (tm->head + 1) % TIMING_SLOTS;
	tm->count--;
	if (!tm->count)
		tm->claimable = false;
	return 0;
}

void tp_lin_timing_harvest(struct tp_lineage *lin)
{
	struct tp_lin_timing *tm = lin->timing;

	if (!tm || tm->off)
		return;
	while (tm->count && (!tm->claimable || tm->count > 1) &&
	       !harvest_one(lin, tm, false))
		;
}

void tp_lineage_harvest_costs(struct tp_lineage *lin)
{
	struct tp_lin_timing *tm = lin->timing;

	/* The newest pair is complete too once claimed. */
	if (!tm || tm->off || tm->claimable)
		return;
	while (tm->count && !harvest_one(lin, tm, false))
		;
}

int tp_lin_timing_begin(struct tp_lineage *lin)
{
	struct tp_lin_timing *tm = timing(lin);
	struct tp_vmm *vmm = lin->vmm;
	struct tp_lin_pair *p;
	int ret;

	if (!tm)
		return -EOPNOTSUPP;
	tp_lin_timing_harvest(lin);
	/* An unclaimed pair (its launch failed) is dropped. */
	if (tm->claimable) {
		tm->count--;
		tm->claimable = false;
	}
	if (tm->count == TIMING_SLOTS)
		harvest_one(lin, tm, true);
	p = &tm->slot[(tm->head + tm->count) % TIMING_SLOTS];
	if (!p->start) {
		p->start = tp_vmm_event_create_timed(vmm);
		p->end = tp_vmm_event_create_timed(vmm);
		if (!p->start || !p->end) {
			ret = -errno;
			tp_vmm_event_put(vmm, p->start);
			tp_vmm_event_put(vmm, p->end);
			p->start = p->end = NULL;
			return ret;
		}
	}
	ret = tp_vmm_event_record(vmm, p->start, TP_STREAM_COMPUTE);
	if (ret)
		return ret;
	p->rec = NULL;
	p->ts = NULL;
	tm->count++;
	return 0;
}

int tp_lin_timing_end(struct tp_lineage *lin, bool recompute)
{
	struct tp_lin_timing *tm = lin->timing;
	struct tp_lin_pair *p;
	int ret;

	if (!tm || tm->off || !tm->count)
		return -EINVAL;
	p = &tm->slot[(tm->head + tm->count - 1) % TIMING_SLOTS];
	ret = tp_vmm_event_record(lin->vmm, p->end, TP_STREAM_COMPUTE);
	if (ret) {
		tm->count--;
		return ret;
	}
	p->recompute = recompute;
	tm->claimable = true;
	return 0;
}

bool tp_lin_timing_claim(struct tp_lineage *lin, struct tp_lin_rec *rec,
			 struct tp_lin_type *ts)
{
	struct tp_lin_timing *tm = lin->timing;
	struct tp_lin_pair *p;

	if (!tm || tm->off || !tm->claimable)
		return false;
	p = &tm->slot[(tm->head + tm->count - 1) % TIMING_SLOTS];
	p->rec = rec;
	p->ts = rec ? rec->ts : ts;
	tm->claimable = false;
	return true;
}

void tp_lin_timing_forget(struct tp_lineage *lin, struct tp_lin_rec *rec)
{
	struct tp_lin_timing *tm = lin->timing;
	unsigned i;

	if (!tm)
		return;
	for (i = 0; i < tm->count; i++) {
		struct tp_lin_pair *p = &tm->slot[(tm->head + i) % TIMING_SLOTS];

		if (p->rec == rec)
			p->rec = NULL;	/* p->ts still takes it */
	}
}

void tp_lin_timing_fini(struct tp_lineage *lin)
{
	struct tp_lin_timing *tm = lin->timing;
	struct tp_vmm *vmm = lin->vmm;
	unsigned i;

	if (!tm)
		return;
	for (i = 0; i < TIMING_SLOTS; i++) {
		tp_vmm_event_put(vmm, tm->slot[i].start);
		tp_vmm_event_put(vmm, tm->slot[i].end);
	}
	free(tm);
	lin->timing = NULL;
}
