/* SPDX-License-Identifier: MIT */
/*
 * Room for the parts of a split run (op_split.c): which rows of its own
 * tensors leave between parts. The pager's victims are the tensors no
 * one pins, and the op pins most of what is resident, each of its
 * tensors by the rows it holds; the pager, making room for a tensor's
 * rows, never takes that tensor's own pages. So the rows the op will not
 * read again, or not for a while, it sends away itself, where the next
 * rows lack room.
 */
#include "lineage/lineage_int.h"
#include "lineage/split_run.h"

/* Pages the cut outputs' rows [@r0, @r1) may need. */
static size_t rows_need(struct split_run *r, size_t r0, size_t r1)
{
	size_t n = 0;

	for (unsigned k = 0; k < r->n_out; k++)
		if (r->out[k].row_bytes)
			n += tp_pager_span_pages(r->pg, r0 * r->out[k].row_bytes,
						 (r1 - r0) * r->out[k].row_bytes);
	return n;
}

/*
 * Whether input @k streams rows of its own (not regenerated into
 * scratch), counted once where the op reads the tensor twice.
 */
static bool own_stream(const struct split_run *r, unsigned k)
{
	return r->in[k].stream && !r->in[k].regen && tp_split_first_use(r, k);
}

/* Pages of the streaming inputs' rows [@a, @b) that are not resident. */
static size_t streams_missing(struct split_run *r, size_t a, size_t b)
{
	size_t n = 0;

	for (unsigned k = 0; k < r->n_in; k++)
		if (own_stream(r, k))
			n += tp_pager_missing_pages(r->pg, r->in[k].t,
						    a * r->in[k].row_bytes,
						    (b - a) * r->in[k].row_bytes);
	return n;
}

/*
 * A streaming input's rows from @r2 on, not read yet in this pass, leave
 * for host swap (never evicted: tp_pager_hold_rows()), to come back a
 * part at a time. A pass before this one brought them back and left them
 * resident while room lasted; pinned by the part the op holds, the
 * tensor is no victim, and the room its unread rows take is none the
 * pager can find. Where they came from host swap, the swap cache still
 * holds their copies: leaving copies nothing.
 */
static void drop_unread_rows(struct split_run *r, size_t r2)
{
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];
		size_t off = r2 * io->row_bytes;

		if (own_stream(r, k) && off < io->t->bytes)
			tp_pager_offload_range(r->pg, io->t, off,
					       io->t->bytes - off);
	}
}

/*
 * Room for part @i's rows [@r0, @r1) from the streaming inputs' own rows:
 * the pager, making room for a tensor's rows, takes no victim's pages
 * from a tensor someone pins, and the op pins each streaming input by
 * the rows it holds. Part 0 of a pass after the first starts again at
 * row 0, where the rows the pass before left resident (its last parts')
 * are not read for a while: those from @r1 on leave for host swap
 * (without a copy where they came from there: the swap cache holds
 * theirs). A later part of the last pass finds the rows the part before
 * read, let go only once this part's were taken: those before @r0 leave
 * as rows read do (tp_pager_rows_done()).
 */
void tp_split_part_room(struct split_run *r, unsigned pass, unsigned i,
			bool last, size_t r0, size_t r1)
{
	size_t need = last ? rows_need(r, r0, r1) : 0;

	if (i ? !last : !pass)
		return;
	if (!i)
		need += streams_missing(r, r0, r1);
	if (!need || tp_pager_fits_now(r->pg, need))
		return;
	if (!i) {
		drop_unread_rows(r, r1);
		return;
	}
	for (unsigned k = 0; k < r->n_in; k++)
		if (own_stream(r, k))
			tp_pager_rows_done(r->pg, r->in[k].t, 0,
					   r0 * r->in[k].row_bytes, false);
}

/*
 * Make room for rows [@r1, @r2) (of the cut outputs, and of the streaming
 * inputs, which may come back from swap) from the cut inputs' rows before
 * @r1, those of the part that ended, [@r0, @r1), held yet by a streaming
 * input; and, with r->out_leave, from the cut outputs' rows written
 * before @r0 (those of the part that ended are held until the next
 * part's are). A streaming input's rows that go to host swap leave
 * whether the room is short or not.
 */
void tp_split_drop_read_rows(struct split_run *r, size_t r0, size_t r1,
			     size_t r2)
{
	size_t need = rows_need(r, r1, r2);

	for (unsigned k = 0; k < r->n_in; k++)
		if (r->in[k].stream)
			need += tp_pager_span_pages(r->pg,
						    r1 * r->in[k].row_bytes,
						    (r2 - r1) * r->in[k].row_bytes);
	/*
	 * A streaming input's rows read that go to host swap go now, room
	 * short or not: their copy runs beside the next part, and the room
	 * is there when a part after it needs it, not waited for then.
	 */
	for (unsigned k = 0; r0 && k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (own_stream(r, k) && tp_pager_rows_offloaded(r->pg, io->t))
			tp_pager_rows_done(r->pg, io->t, 0, r0 * io->row_bytes,
					   false);
	}
	if (tp_pager_fits_now(r->pg, need))
		return;
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (!io->row_bytes || io->regen || !tp_split_first_use(r, k))
			continue;
		/* -EPERM: it cannot be regenerated, and stays. */
		if (io->stream && r0)
			tp_pager_rows_done(r->pg, io->t, 0, r0 * io->row_bytes,
					   false);
		else if (!io->stream)
			tp_pager_evict_range(r->pg, io->t, 0,
					     r1 * io->row_bytes);
	}
	for (unsigned k = 0; r->out_leave && r0 && k < r->n_out; k++)
		if (r->out[k].row_bytes)
			tp_pager_rows_done(r->pg, r->out[k].t, 0,
					   r0 * r->out[k].row_bytes, true);
	if (!tp_pager_fits_now(r->pg, need))
		drop_unread_rows(r, r2);
}

/*
 * In a pass before the last, where the streaming inputs' rows [@r1, @r2)
 * that are not resident lack room, the rows this pass read, [0, @r1),
 * leave for host swap: a pass after this one reads them again, so none
 * is evicted, and the pager, making room for a tensor, takes no victim's
 * pages from that tensor itself. Rows that came from host swap leave
 * without a copy (the swap cache holds theirs).
 */
void tp_split_offload_read_rows(struct split_run *r, size_t r1, size_t r2)
{
	size_t need = streams_missing(r, r1, r2);

	if (!need || tp_pager_fits_now(r->pg, need) || !r1)
		return;
	for (unsigned k = 0; k < r->n_in; k++)
		if (own_stream(r, k))
			tp_pager_offload_range(r->pg, r->in[k].t, 0,
					       r1 * r->in[k].row_bytes);
}
