/* SPDX-License-Identifier: MIT */
/*
 * Running an op in parts: TSPLIT's micro-tensors (DESIGN, "Split
 * micro-tensors"). An op that declares TP_OP_SPLITTABLE and does not fit
 * whole runs on consecutive rows of the tensors it cuts along their
 * outermost dimension. Those rows are a byte range of the tensor's VA
 * range, so cutting and joining copy nothing.
 *
 * What each part holds pinned:
 *  - a cut input, from the part's first row to its end: the rows still
 *    to be read never leave (one evicted would bring the whole tensor
 *    back), and part 0 sees every row, as tp_op_launch promises;
 *    but a cut input partly in host swap, of an op whose parts read
 *    their rows alone (TP_OP_SPLIT_LOCAL), streams: each part holds its
 *    rows alone, so that those in swap come back a part at a time; the
 *    rows not yet read leave by offload only (tp_pager_hold_rows()); and
 *    where no number of parts fits otherwise, a resident one streams too;
 *  - a cut output, the part's rows; the next part's are acquired before
 *    these are released, so that a page two parts share stays resident;
 *  - the whole inputs and outputs, whole, from the first part to the last.
 * Between parts, when the next part's rows lack room, the pages of the
 * cut inputs that every part so far has read are evicted: the pager's
 * victims are the tensors no one pins, and at this point the op holds
 * most of what is resident.
 *
 * An op whose split may sum (struct tp_op_split, sums) does so where
 * the parts above do not fit: a part then reads only its own rows of the
 * cut inputs, as a TP_OP_SPLIT_LOCAL type's do, and adds its share to the
 * whole outputs (a weight's gradient over the batch); the parts may go
 * over the rows more than once (a mean, then a variance, then the outputs
 * that need both). Until the last pass every row is read again, so none
 * is evicted: those of a cut input that does not stream are held from row
 * 0, and a streaming one's leave by offload only.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "lineage/lineage_int.h"

struct split_io {
	struct tp_tensor *t;
	size_t row_bytes;	/* 0: whole */
	bool stream;		/* a part holds its rows alone */
	size_t off, len;	/* the range held, len 0: none */
	char *base;		/* address of byte 0 once acquired */
};

struct split_run {
	struct tp_lineage *lin;
	struct tp_pager *pg;
	const struct tp_op_type *type;
	const void *params;
	size_t params_len;
	const struct tp_op_split *s;
	bool recompute;
	bool sums;		/* the parts sum into the whole outputs */
	bool local;		/* a part reads its rows of the cut inputs alone */
	unsigned passes;	/* over the rows: 1 unless the split sums */
	size_t granule;		/* rows the parts begin at multiples of */
	/* A part's rows of a resident input too may come a part at a time. */
	bool stream_resident;
	struct split_io *in, *out;
	struct tp_tensor *const *args;	/* the inputs as given */
	unsigned *order;		/* the order part 0 holds them in */
	unsigned n_in, n_out;
	void **in_addr, **out_addr;
	size_t *in_len, *out_len, *whole_in;
};

static int hold(struct split_run *r, struct split_io *io, size_t off,
		size_t len, unsigned mode)
{
	void *addr;
	int ret = tp_pager_acquire(r->pg, io->t, off, len, mode, &addr);

	if (ret)
		return ret;
	if (io->len)
		tp_pager_release(r->pg, io->t, io->off, io->len);
	io->off = off;
	io->len = len;
	io->base = (char *)addr - off;
	return 0;
}

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

	if (!r->local || !r->in[k].row_bytes ||
	    t->pins || tp_pager_has_evicted(t) ||
	    (!tp_pager_swapped_pages(t) && !r->stream_resident) ||
	    !tp_lineage_can_regenerate(r->lin, t))
		return false;
	for (unsigned j = 0; j < r->n_in; j++)
		if (j != k && r->in[j].t == t)
			return false;
	return true;
}

/* Keep the streaming inputs' unread rows from eviction (@hold), or not. */
static void hold_rows(struct split_run *r, bool hold)
{
	for (unsigned k = 0; k < r->n_in; k++)
		if (r->in[k].stream)
			tp_pager_hold_rows(r->pg, r->in[k].t, hold);
}

/* Release what is held: r->out follows r->in in one array. */
static void let_go(struct split_run *r)
{
	for (unsigned k = 0; k < r->n_in + r->n_out; k++)
		if (r->in[k].len)
			tp_pager_release(r->pg, r->in[k].t, r->in[k].off,
					 r->in[k].len);
}

/* Whether @k is the first of the inputs holding its tensor. */
static bool first_use(const struct split_run *r, unsigned k)
{
	for (unsigned j = 0; j < k; j++)
		if (r->in[j].t == r->in[k].t)
			return false;
	return true;
}

/* The first row of part @i of @parts, at a multiple of the granule. */
static size_t part_row(const struct split_run *r, unsigned i, unsigned parts)
{
	size_t g = r->granule, rows = r->s->rows;
	size_t row = (rows + g - 1) / g * i / parts * g;

	return row < rows ? row : rows;
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
 * none up to @max. A part holds the whole tensors, the cut inputs from its rows on
 * (those lineage cannot regenerate, or someone else pins, never leave),
 * and the cut outputs up to its rows; at most one page more per cut
 * output where parts meet, and per cut input a handle's worth (the
 * handle where parts meet leaves only once every row of it was read).
 */
static unsigned choose_parts(struct split_run *r, size_t room, unsigned min,
			     unsigned max)
{
	size_t whole = 0, cut_in = 0, cut_out = 0, edges = 0;
	size_t st_res = 0, st_swap = 0;
	size_t handle = tp_pager_handle_max(r->pg), units;
	unsigned k, p;

	for (k = 0; k < r->n_in; k++) {
		size_t pages = tp_pager_span_pages(r->pg, 0, r->in[k].t->bytes);

		if (!first_use(r, k))
			continue;
		if (r->in[k].stream) {
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
			edges++;
		} else {
			whole += pages;
		}
	}
	/* a plan made under other limits takes the most they allow */
	if (min > max)
		min = max;
	units = (r->s->rows + r->granule - 1) / r->granule;
	if (min > units)
		min = (unsigned)units;
	for (p = min > 2 ? min : 2; p <= max && p <= units; p++) {
		/* a part's rows and the next's, taken before these go */
		size_t st = st_res + 2 * part_pages(r, st_swap, p);
		/*
		 * (a pass before the last holds the cut inputs whole and no
		 * cut output: at most a)
		 */
		size_t a = cut_in + part_pages(r, cut_out, p) + st;
		size_t b = part_pages(r, cut_in, p) + cut_out + st;

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
		if (first_use(r, k))
			n += tp_pager_pinned_pages(r->in[k].t);
	for (k = 0; k < r->n_out; k++)
		n += tp_pager_pinned_pages(r->out[k].t);
	return n;
}

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
 * Make room for rows [@r1, @r2) (of the cut outputs, and of the streaming
 * inputs, which may come back from swap) from the cut inputs' rows before
 * @r1, those of the part that ended, [@r0, @r1), held yet by a streaming
 * input.
 */
static void drop_read_rows(struct split_run *r, size_t r0, size_t r1,
			   size_t r2)
{
	size_t need = rows_need(r, r1, r2);

	for (unsigned k = 0; k < r->n_in; k++)
		if (r->in[k].stream)
			need += tp_pager_span_pages(r->pg,
						    r1 * r->in[k].row_bytes,
						    (r2 - r1) * r->in[k].row_bytes);
	if (tp_pager_fits_now(r->pg, need))
		return;
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (!io->row_bytes || !first_use(r, k))
			continue;
		/* -EPERM: it cannot be regenerated, and stays. */
		if (io->stream && r0)
			tp_pager_evict_read_rows(r->pg, io->t, 0,
						 r0 * io->row_bytes);
		else if (!io->stream)
			tp_pager_evict_range(r->pg, io->t, 0,
					     r1 * io->row_bytes);
	}
}

/*
 * Hold the inputs part 0 holds whole or from row 0 (not the streaming
 * ones, held part by part) in r->order: 0, or -errno with *@failed the
 * input that failed and *@held how many were held before it.
 */
static int hold_inputs(struct split_run *r, struct tp_tensor **failed,
		       unsigned *held)
{
	*held = 0;
	for (unsigned i = 0; i < r->n_in; i++) {
		struct split_io *io = &r->in[r->order[i]];
		int ret;

		if (io->stream)
			continue;
		ret = hold(r, io, 0, io->t->bytes, TP_READ);
		if (ret) {
			*failed = io->t;
			return ret;
		}
		(*held)++;
	}
	return 0;
}

/* Let go of the inputs held. */
static void let_go_inputs(struct split_run *r)
{
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (io->len)
			tp_pager_release(r->pg, io->t, io->off, io->len);
		io->len = 0;
	}
}

/*
 * Acquire what part 0 holds besides the cut outputs and the streaming
 * inputs. An input to be regenerated that finds no room while others are
 * held is tried again first, with nothing held, as a whole run does
 * (op_run.c, acquire_all()).
 */
static int hold_first(struct split_run *r)
{
	struct tp_tensor *failed = NULL;
	unsigned k, held;
	int ret;

	for (k = 0; k < r->n_in; k++)
		r->order[k] = k;
	ret = hold_inputs(r, &failed, &held);
	if (tp_lin_regen_retry(ret, failed, held)) {
		tp_lin_regen_first(r->args, r->n_in, r->order);
		let_go_inputs(r);
		ret = hold_inputs(r, &failed, &held);
	}
	if (ret)
		return ret;
	for (k = 0; k < r->n_out; k++) {
		if (r->out[k].row_bytes)
			continue;
		ret = hold(r, &r->out[k], 0, r->out[k].t->bytes, TP_WRITE);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Hold rows [@r0, @r1) of the cut outputs (@out: those of the last
 * pass's parts), or of the streaming inputs.
 */
static int hold_part_rows(struct split_run *r, bool out, size_t r0,
			  size_t r1)
{
	struct split_io *ios = out ? r->out : r->in;
	unsigned n = out ? r->n_out : r->n_in;

	for (unsigned k = 0; k < n; k++) {
		struct split_io *io = &ios[k];
		int ret;

		if (out ? !io->row_bytes : !io->stream)
			continue;
		ret = hold(r, io, r0 * io->row_bytes, (r1 - r0) * io->row_bytes,
			   out ? TP_WRITE : TP_READ);
		if (ret)
			return ret;
	}
	return 0;
}

/* Let go of the streaming inputs' rows. */
static void let_go_streams(struct split_run *r)
{
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (!io->stream || !io->len)
			continue;
		tp_pager_release(r->pg, io->t, io->off, io->len);
		io->len = 0;
	}
}

/* Where the launch of rows [@r0, @r1) finds its tensors. */
static void part_addrs(struct split_run *r, size_t r0, size_t r1, bool last)
{
	for (unsigned k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];
		size_t b = io->row_bytes;

		r->in_addr[k] = io->base + (b ? r0 * b : 0);
		r->in_len[k] = b ? (r1 - r0) * b : io->t->bytes;
	}
	for (unsigned k = 0; k < r->n_out; k++) {
		struct split_io *io = &r->out[k];
		size_t b = io->row_bytes;

		/* a pass before the last writes no cut output */
		r->out_addr[k] = b && !last ? NULL :
				 io->base + (b ? r0 * b : 0);
		r->out_len[k] = b ? (last ? (r1 - r0) * b : 0) : io->t->bytes;
	}
}

/* Part @i of @parts in pass @pass over the rows. */
static int run_part(struct split_run *r, unsigned pass, unsigned i,
		    unsigned parts, uint64_t *ns)
{
	size_t r0 = part_row(r, i, parts), r1 = part_row(r, i + 1, parts);
	size_t r2 = part_row(r, i + 2, parts);
	bool last = pass + 1 == r->passes;
	struct tp_lin_part part = {
		.part = i, .parts = parts, .row0 = r0, .rows = r1 - r0,
		.total = r->s->rows, .whole_in_bytes = r->whole_in,
		.sums = r->sums, .pass = pass, .passes = r->passes,
	};
	uint64_t part_ns = 0;
	unsigned k;
	int ret;

	ret = last ? hold_part_rows(r, true, r0, r1) : 0;
	/*
	 * A streaming input's rows: part 0's here, the next ones below; in a
	 * pass before the last, each part's here.
	 */
	if (!ret && (!i || !last))
		ret = hold_part_rows(r, false, r0, r1);
	if (ret)
		return ret;
	part_addrs(r, r0, r1, last);
	ret = tp_lin_launch(r->lin, r->type, r->params, r->params_len,
			    r->in_addr, r->in_len,
			    r->n_in, r->out_addr, r->out_len, r->n_out,
			    r->recompute,
			    &part, &part_ns);
	if (ret)
		return ret;
	*ns += part_ns;
	/*
	 * Before the last pass a streaming input is let go between parts:
	 * none of its rows is evicted (it leaves by offload only, see
	 * tp_pager_hold_rows()), so a range of it comes back alone, and
	 * unpinned it may leave for host swap whole as the next part needs
	 * the room.
	 */
	if (!last) {
		let_go_streams(r);
		return 0;
	}
	if (i + 1 == parts)
		return 0;
	/* The next part holds the cut inputs from its first row on. */
	for (k = 0; k < r->n_in; k++) {
		struct split_io *io = &r->in[k];

		if (!io->row_bytes || io->stream)
			continue;
		ret = hold(r, io, r1 * io->row_bytes,
			   io->t->bytes - r1 * io->row_bytes, TP_READ);
		if (ret)
			return ret;
	}
	drop_read_rows(r, r0, r1, r2);
	/*
	 * A streaming input: the next part's rows, taken before these are
	 * let go (the range of a tensor the op still pins is there as it
	 * is; one of a tensor no one pins would be regenerated whole, as it
	 * has evicted pages).
	 */
	return hold_part_rows(r, false, r1, r2);
}

static int split_alloc(struct split_run *r)
{
	unsigned n = r->n_in + r->n_out;
	void *mem = calloc(1, n * (sizeof(struct split_io) + sizeof(void *) +
				   sizeof(size_t)) +
			   r->n_in * (sizeof(size_t) + sizeof(unsigned)));

	if (!mem)
		return -ENOMEM;
	r->in = mem;
	r->out = r->in + r->n_in;
	r->in_addr = (void **)(r->out + r->n_out);
	r->out_addr = r->in_addr + r->n_in;
	r->in_len = (size_t *)(r->out_addr + r->n_out);
	r->out_len = r->in_len + r->n_in;
	r->whole_in = r->out_len + r->n_out;
	r->order = (unsigned *)(r->whole_in + r->n_in);
	return 0;
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
	for (k = 0; k < r->n_in; k++)
		r->in[k].stream = streams(r, k);
	parts = choose_parts(r, room(r), want, max);
	if (parts || !r->local)
		return parts;
	r->stream_resident = true;
	for (k = 0; k < r->n_in; k++)
		r->in[k].stream = streams(r, k);
	return choose_parts(r, room(r), want, max);
}

int tp_lin_run_split(struct tp_lineage *lin, const struct tp_op_type *type,
		     const void *params, size_t params_len,
		     struct tp_tensor *const *in, unsigned n_in,
		     struct tp_tensor *const *out, unsigned n_out,
		     const struct tp_op_split *s, bool recompute,
		     unsigned want, uint64_t *ns)
{
	struct split_run r = {
		.lin = lin, .pg = lin->pg, .type = type, .params = params,
		.params_len = params_len, .s = s, .recompute = recompute,
		.n_in = n_in, .n_out = n_out,
	};
	unsigned k, parts, i, pass;
	int ret;

	*ns = 0;
	sum_parts(&r, false);
	ret = split_alloc(&r);
	if (ret)
		return ret;
	r.args = in;
	for (k = 0; k < n_in; k++) {
		r.in[k].t = in[k];
		r.whole_in[k] = in[k]->bytes;
		if (tp_lin_is_cut(s->in, k))
			r.in[k].row_bytes = in[k]->bytes / s->rows;
	}
	for (k = 0; k < n_out; k++) {
		r.out[k].t = out[k];
		if (tp_lin_is_cut(s->out, k))
			r.out[k].row_bytes = out[k]->bytes / s->rows;
	}
	parts = fit_parts(&r, want);
	/* Where the parts reading every row do not fit, they may sum. */
	if (!parts && s->sums) {
		sum_parts(&r, true);
		parts = fit_parts(&r, want);
	}
	if (!parts) {
		ret = -ENOMEM;
		goto out;
	}
	hold_rows(&r, true);
	ret = hold_first(&r);
	for (pass = 0; !ret && pass < r.passes; pass++)
		for (i = 0; !ret && i < parts; i++) {
			ret = tp_pager_work(r.pg, 1, true);
			if (!ret)
				ret = run_part(&r, pass, i, parts, ns);
		}
	if (!ret)
		tp_pager_note_split(r.pg, parts);
	let_go(&r);
	hold_rows(&r, false);
	free(r.in);
	return ret;
out:
	let_go(&r);
	free(r.in);
	return ret;
}
