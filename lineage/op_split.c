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
 * most of what is resident (split_room.c).
 *
 * An op whose split may sum (struct tp_op_split, sums) does so where
 * the parts above do not fit: a part then reads only its own rows of the
 * cut inputs, as a TP_OP_SPLIT_LOCAL type's do, and adds its share to the
 * whole outputs (a weight's gradient over the batch); the parts may go
 * over the rows more than once (a mean, then a variance, then the outputs
 * that need both). Until the last pass every row is read again, so none
 * is evicted: those of a cut input that does not stream are held from row
 * 0, and a streaming one's leave by offload only.
 *
 * Where none of these fit with the cut outputs held to the end, their
 * rows written leave for host swap between parts (split_fit.c says which
 * way a run takes). A part that finds no room all the same runs on in
 * smaller parts from where it stopped (resume_finer()).
 */
#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "lineage/lineage_int.h"
#include "lineage/split_run.h"

/* Runs on in smaller parts after one found no room (resume_finer()). */
#define SPLIT_RESUMES	4

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
 * The bytes [@off, @off + @len) of an evicted input regenerated alone
 * into scratch (regen_rows.c), in place of the last part's, which goes
 * first.
 */
static int hold_regen(struct split_run *r, struct split_io *io, size_t off,
		      size_t len)
{
	struct tp_tensor *sc;
	char *addr;
	int ret;

	/* Scratch shares no page with the next part's: it goes first. */
	tp_lin_rows_put(r->lin, io->sc);
	io->sc = NULL;
	io->len = 0;
	ret = tp_lin_regen_rows(r->lin, io->t, off, len, &sc, &addr);
	if (ret)
		return ret;
	io->sc = sc;
	io->off = off;
	io->len = len;
	io->base = addr - off;
	return 0;
}

/*
 * Keep the streaming inputs' unread rows from eviction (@hold), or not;
 * and the cut outputs', where their rows written leave for host swap
 * (the pager then brings back no more of them than a part asks for).
 */
static void hold_rows(struct split_run *r, bool hold)
{
	for (unsigned k = 0; k < r->n_in; k++)
		if (r->in[k].stream && !r->in[k].regen)
			tp_pager_hold_rows(r->pg, r->in[k].t, hold);
	for (unsigned k = 0; r->out_leave && k < r->n_out; k++)
		if (r->out[k].row_bytes)
			tp_pager_hold_rows(r->pg, r->out[k].t, hold);
}

/* Release what @n ios from @io hold (r->out follows r->in in one array). */
static void let_go_ios(struct split_run *r, struct split_io *io, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (io[k].len && !io[k].regen)
			tp_pager_release(r->pg, io[k].t, io[k].off, io[k].len);
		io[k].len = 0;
		tp_lin_rows_put(r->lin, io[k].sc);
		io[k].sc = NULL;
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
		let_go_ios(r, r->in, r->n_in);
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
		if (!out && io->regen) {
			ret = hold_regen(r, io, r0 * io->row_bytes,
					 (r1 - r0) * io->row_bytes);
			if (ret)
				return ret;
			continue;
		}
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
		if (io->regen) {
			tp_lin_rows_put(r->lin, io->sc);
			io->sc = NULL;
		} else {
			tp_pager_release(r->pg, io->t, io->off, io->len);
		}
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

/* Where a part stopped: holding its rows, in its launch, or after it. */
enum part_stage {
	PART_HOLD,
	PART_LAUNCH,
	PART_NEXT,
};

/* Part @i of @parts in pass @pass over the rows; *@stage: how far it got. */
static int run_part(struct split_run *r, unsigned pass, unsigned i,
		    unsigned parts, uint64_t *ns, enum part_stage *stage)
{
	size_t r0 = tp_split_part_row(r, i, parts);
	size_t r1 = tp_split_part_row(r, i + 1, parts);
	size_t r2 = tp_split_part_row(r, i + 2, parts);
	bool last = pass + 1 == r->passes;
	struct tp_lin_part part = {
		.part = r->base + i, .parts = r->base + parts,
		.row0 = r0, .rows = r1 - r0,
		.total = r->s->rows, .whole_in_bytes = r->whole_in,
		.sums = r->sums, .pass = pass, .passes = r->passes,
	};
	uint64_t part_ns = 0;
	unsigned k;
	int ret;

	tp_split_part_room(r, pass, i, last, r0, r1);
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
	*stage = PART_LAUNCH;
	ret = tp_lin_launch(r->lin, r->type, r->params, r->params_len,
			    r->in_addr, r->in_len,
			    r->n_in, r->out_addr, r->out_len, r->n_out,
			    r->recompute,
			    &part, &part_ns);
	if (ret)
		return ret;
	*ns += part_ns;
	*stage = PART_NEXT;
	/*
	 * Before the last pass a streaming input is let go between parts:
	 * none of its rows is evicted (it leaves by offload only, see
	 * tp_pager_hold_rows()), so a range of it comes back alone, and
	 * unpinned it may leave for host swap whole as another tensor needs
	 * the room; as the next part's rows need it, its rows read leave.
	 */
	if (!last) {
		let_go_streams(r);
		tp_split_offload_read_rows(r, r1, r2);
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
	tp_split_drop_read_rows(r, r0, r1, r2);
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

/*
 * Where part @i of @parts found no room though the parts were chosen to
 * fit (copies to host not landed yet, a regeneration holding more than
 * foreseen, a launch short of scratch), the rows from its first (or,
 * once it ran, from the next part's) are run on in twice as many parts
 * as were left, as often as SPLIT_RESUMES. No row is run twice: parts
 * that sum add each row once, and a summing launch that failed may have
 * added its share, so that one is not resumed. Return: the parts now, 0
 * where there are none finer.
 */
static unsigned resume_finer(struct split_run *r, unsigned *i, unsigned parts,
			     enum part_stage stage, unsigned *resumes)
{
	unsigned at = stage == PART_NEXT ? *i + 1 : *i, left = parts - at;
	size_t from, units;

	if ((stage == PART_LAUNCH && r->sums) ||
	    ++*resumes > SPLIT_RESUMES || at >= parts ||
	    r->base + at + 2 * left > r->lin->conf.split_max_parts)
		return 0;
	from = tp_split_part_row(r, at, parts);
	units = tp_split_part_units(r, from);
	if (left >= units)
		return 0;
	r->from = from;
	r->base += at;
	*i = 0;
	return 2 * left < units ? 2 * left : (unsigned)units;
}

/*
 * Run the op in *@parts parts over its passes (*@parts: how many it took
 * in the end); *@ns: the launches' time. What was held is let go
 * whatever the outcome.
 */
static int run_parts(struct split_run *r, unsigned *n_parts, uint64_t *ns,
		     bool *at_first)
{
	unsigned parts = *n_parts;
	unsigned pass, i, resumes = 0;
	int ret;

	hold_rows(r, true);
	ret = hold_first(r);
	*at_first = ret != 0;
	for (pass = 0; !ret && pass < r->passes; pass++) {
		/* A pass goes over every row, in as many parts as the last. */
		parts += r->base;
		r->from = 0;
		r->base = 0;
		for (i = 0; !ret && i < parts;) {
			enum part_stage stage = PART_HOLD;

			ret = tp_pager_work(r->pg, 1, true);
			if (!ret)
				ret = run_part(r, pass, i, parts, ns, &stage);
			/*
			 * A replay that finds no room fails to the reader
			 * that asked for it, which has its own ways on (the
			 * regeneration first, with nothing held; its own
			 * parts resumed finer).
			 */
			if (ret == -ENOMEM && !r->recompute) {
				unsigned finer = resume_finer(r, &i, parts,
							      stage, &resumes);

				if (finer) {
					parts = finer;
					ret = 0;
					continue;
				}
			}
			i++;
		}
	}
	*n_parts = r->base + parts;
	let_go_ios(r, r->in, r->n_in + r->n_out);
	hold_rows(r, false);
	return ret;
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
	unsigned k, parts;
	bool at_first = false;
	int ret;

	*ns = 0;
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
	parts = tp_split_fit(&r, want);
	ret = parts ? run_parts(&r, &parts, ns, &at_first) : -ENOMEM;
	/*
	 * An evicted cut input found no room to come back whole, or no way
	 * fits with it whole: its rows regenerated a part at a time may,
	 * where nothing was launched yet.
	 */
	if (ret == -ENOMEM && (!parts || at_first) && !r.stream_regen &&
	    tp_split_rows_may_help(&r)) {
		r.stream_regen = true;
		r.from = 0;
		r.base = 0;
		parts = tp_split_fit(&r, want);
		ret = parts ? run_parts(&r, &parts, ns, &at_first) : -ENOMEM;
	}
	if (!ret)
		tp_pager_note_split(r.pg, parts);
	free(r.in);
	return ret;
}
