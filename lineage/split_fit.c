/* SPDX-License-Identifier: MIT */
/*
 * How an op that does not fit whole runs in parts (op_split.c): how many,
 * and in which way, tried in order until one fits the room there is now,
 * so that a way that costs more is taken only where the cheaper do not
 * fit:
 *  - plain parts, part 0 reading every row of the cut inputs;
 *  - the same with the resident cut inputs of an op local to its rows
 *    streaming too (their unread rows to host swap as the parts need the
 *    room);
 *  - parts that sum, where the split may (struct tp_op_split, sums);
 *  - all of these again with the cut outputs' rows written leaving for
 *    host swap between parts.
 * Each is priced by choose_parts() from the pages a part holds.
 */
#include "lineage/split_run.h"

/*
 * Whether cut input @k streams: the op's parts read their rows alone, the
 * tensor is in host swap in part (what streaming saves) or, with
 * r->stream_resident, wholly resident (its unread rows may then leave by
 * offload as the parts need room), read once by the op, pinned by no one
 * else, and its rows read can be evicted (lineage regenerates it) while
 * those unread come back without a regeneration (none is evicted now).
 */
static bool streams(const struct split_run *r, unsigned k)
{
	const struct tp_tensor *t = r->in[k].t;

	if (!r->local || !r->in[k].row_bytes || t->pins)
		return false;
	/* Evicted: its rows regenerated alone, or it comes back whole. */
	if (tp_pager_has_evicted(t)) {
		if (!r->stream_regen || !tp_lin_rows_regenerable(r->lin, t))
			return false;
	} else if ((!tp_pager_swapped_pages(t) && !r->stream_resident) ||
		   !tp_lineage_can_regenerate(r->lin, t)) {
		return false;
	}
	for (unsigned j = 0; j < r->n_in; j++)
		if (j != k && r->in[j].t == t)
			return false;
	return true;
}

/* The most pages of a cut tensor of @pages that one of @p parts holds. */
static size_t part_pages(const struct split_run *r, size_t pages, unsigned p)
{
	size_t g = r->granule, rows = r->s->rows, most;

	if (g <= 1)
		return (pages + p - 1) / p;
	most = ((rows + g - 1) / g + p - 1) / p * g;
	if (most > rows)
		most = rows;
	return (pages * most + rows - 1) / rows;
}

/*
 * The fewest parts from @min on whose peak fits in @room chunks, 0 if
 * none up to @max. A part holds the whole tensors, the cut inputs from
 * its rows on (those lineage cannot regenerate, or someone else pins,
 * never leave), and the cut outputs up to its rows (with r->out_leave,
 * its rows and the next part's); at most one page more per cut output
 * where parts meet (a handle's worth where its rows leave), and per cut
 * input a handle's worth (the handle where parts meet leaves only once
 * every row of it was read).
 */
static unsigned choose_parts(struct split_run *r, size_t room, unsigned min,
			     unsigned max)
{
	size_t whole = 0, cut_in = 0, cut_out = 0, edges = 0;
	size_t st_res = 0, st_swap = 0, st_regen = 0;
	size_t handle = tp_pager_handle_max(r->pg), units;
	unsigned k, p;

	for (k = 0; k < r->n_in; k++) {
		size_t pages = tp_pager_span_pages(r->pg, 0, r->in[k].t->bytes);

		if (!tp_split_first_use(r, k))
			continue;
		if (r->in[k].regen) {
			/* rows regenerated alone: in scratch, with what
			 * their producers hold (regen_rows.c) */
			double ratio;
			size_t fixed;

			tp_lin_rows_cost(r->lin, r->in[k].t, &ratio, &fixed);
			st_regen += (size_t)(ratio * (double)pages) + 1;
			whole += tp_pager_span_pages(r->pg, 0, fixed);
			edges += handle < pages ? handle : pages;
		} else if (r->in[k].stream) {
			size_t sw = r->stream_resident ? pages :
				    tp_pager_swapped_pages(r->in[k].t);

			/* what is here stays; what is in swap (or may
			 * go there) comes a part's rows at a time */
			st_swap += sw;
			st_res += pages - sw;
			edges += handle < pages ? handle : pages;
		} else if (r->in[k].row_bytes && !r->in[k].t->pins &&
		    tp_lineage_can_regenerate(r->lin, r->in[k].t)) {
			cut_in += pages;
			edges += handle < pages ? handle : pages;
		} else {
			whole += pages;
		}
	}
	for (k = 0; k < r->n_out; k++) {
		size_t pages = tp_pager_span_pages(r->pg, 0, r->out[k].t->bytes);

		if (r->out[k].row_bytes) {
			cut_out += pages;
			/* rows written leave by whole handles: one stays */
			if (r->out_leave)
				edges += handle < pages ? handle : pages;
			else
				edges++;
		} else {
			whole += pages;
		}
	}
	/* a plan made under other limits takes the most they allow */
	if (min > max)
		min = max;
	units = tp_split_part_units(r, r->from);
	if (min > units)
		min = (unsigned)units;
	for (p = min > 2 ? min : 2; p <= max && p <= units; p++) {
		/* a part's rows and the next's, taken before these go */
		size_t st = st_res + 2 * part_pages(r, st_swap, p) +
			    part_pages(r, st_regen, p);
		/*
		 * (a pass before the last holds the cut inputs whole and no
		 * cut output: at most a); cut outputs whose rows written
		 * leave hold a part's rows and the next's
		 */
		size_t out = part_pages(r, cut_out, p);
		size_t a = cut_in + (r->out_leave ? 2 * out : out) + st;
		size_t b = part_pages(r, cut_in, p) +
			   (r->out_leave ? 2 * out : cut_out) + st;

		if (whole + (a > b ? a : b) + edges <= room)
			return p;
	}
	return 0;
}

/*
 * Chunks the parts may have: the pool less what others pin. The op's own
 * tensors pinned already (a replay's inputs, held by its frames) are
 * counted in its peak, not twice.
 */
static size_t room(struct split_run *r)
{
	size_t n = tp_pager_room_pages(r->pg);
	unsigned k;

	for (k = 0; k < r->n_in; k++)
		if (tp_split_first_use(r, k))
			n += tp_pager_pinned_pages(r->in[k].t);
	for (k = 0; k < r->n_out; k++)
		n += tp_pager_pinned_pages(r->out[k].t);
	return n;
}

/* Whether the parts sum (struct tp_op_split), in its passes. */
static void sum_parts(struct split_run *r, bool sums)
{
	const struct tp_op_split *s = r->s;

	r->sums = sums;
	r->local = sums || (r->type->flags & TP_OP_SPLIT_LOCAL);
	r->passes = sums && s->passes > 1 ? s->passes : 1;
	r->granule = sums && s->granule > 1 ? s->granule : 1;
}

/* Which inputs stream, and of those which have their rows regenerated. */
static void mark_streams(struct split_run *r)
{
	for (unsigned k = 0; k < r->n_in; k++) {
		r->in[k].stream = streams(r, k);
		r->in[k].regen = r->in[k].stream &&
				 tp_pager_has_evicted(r->in[k].t);
	}
}

/*
 * The parts that fit, 0 if no number does: with the inputs that stream
 * now, then, for an op local to its rows, with the resident ones
 * streaming too, their unread rows sent to host swap as the parts need
 * the room (two resident 2 GB inputs of an add in 4 GiB).
 */
static unsigned fit_parts(struct split_run *r, unsigned want)
{
	unsigned max = r->lin->conf.split_max_parts, parts, k;

	r->stream_resident = false;
	/* Where an evicted input came back whole and found no room, a run
	 * that would read it whole again is no way. */
	for (k = 0; r->stream_regen && !r->local && k < r->n_in; k++)
		if (r->in[k].row_bytes && tp_pager_has_evicted(r->in[k].t))
			return 0;
	mark_streams(r);
	parts = choose_parts(r, room(r), want, max);
	if (parts || !r->local)
		return parts;
	r->stream_resident = true;
	mark_streams(r);
	return choose_parts(r, room(r), want, max);
}

bool tp_split_rows_may_help(const struct split_run *r)
{
	if (!r->lin->conf.regen_rows)
		return false;
	for (unsigned k = 0; k < r->n_in; k++)
		if (r->in[k].row_bytes && tp_pager_has_evicted(r->in[k].t) &&
		    tp_lin_rows_regenerable(r->lin, r->in[k].t))
			return true;
	return false;
}

/*
 * Whether every cut output may send its rows written to host swap: not
 * in a replay, whose outputs are wanted resident by the reader that
 * asked for them.
 */
static bool outputs_may_leave(struct split_run *r)
{
	size_t pages = 0;
	bool any = false;

	if (r->recompute)
		return false;
	for (unsigned k = 0; k < r->n_out; k++) {
		const struct tp_tensor *t = r->out[k].t;

		if (!r->out[k].row_bytes)
			continue;
		if (!tp_pager_can_offload(t) || t->pins)
			return false;
		pages += tp_pager_span_pages(r->pg, 0, t->bytes);
		any = true;
	}
	return any && tp_pager_swap_room_pages(r->pg) >= pages;
}

/*
 * The parts that fit (fit_parts()), summing where the parts reading every
 * row do not fit; and where neither does, the same again with the cut
 * outputs' rows written leaving for host swap as the parts go (two 2 GB
 * gradients of a residual add's backward in 4 GiB).
 */
unsigned tp_split_fit(struct split_run *r, unsigned want)
{
	unsigned parts = 0;

	for (int leave = 0; !parts && leave < 2; leave++) {
		r->out_leave = leave;
		if (leave && !outputs_may_leave(r))
			break;
		sum_parts(r, false);
		parts = fit_parts(r, want);
		/* Where the parts reading every row do not fit, they sum. */
		if (!parts && r->s->sums) {
			sum_parts(r, true);
			parts = fit_parts(r, want);
		}
	}
	return parts;
}
