/* SPDX-License-Identifier: MIT */
/*
 * Rows of an evicted tensor regenerated alone: TSPLIT's micro-tensors
 * for recompute. An op run in parts reads a part's rows of each cut
 * input; one that is evicted came back whole, by a replay of its producer
 * on the producer's whole operands, and where the producer is local to
 * its rows (its output's rows made from the same rows of its inputs)
 * those can pass the budget where the rows would not: a 2.2 GB
 * activation made by relu from another of 2.2 GB, in 4 GiB.
 *
 * Here the producer replays only the rows that cover the bytes asked
 * for, into scratch, its cut inputs' same rows read where they are
 * (resident, or in host swap: a range acquired) or regenerated the same
 * way where they are evicted too, down a chain of such ops; an evicted
 * input made by an op of another kind comes back whole, by the acquire.
 * An op whose parts sum in passes, the last of which only reads the
 * whole outputs the others made (TP_OP_SPLIT_LAST_READS: a batch-norm's
 * statistics), is such an op too while those outputs are still what
 * its run made: its rows are that last pass's part, reading them. The
 * tensor itself is not written: its pages stay evicted, and the reader
 * reads the scratch. A part's launch gives the rows of a whole run, bit for
 * bit (tp_op_run(3), Split), so the scratch holds what the tensor held.
 */
#include <errno.h>
#include <stdlib.h>

#include "lineage/lineage_int.h"

/* Chains longer than this come back whole, as before. */
#define ROWS_MAX_DEPTH	8

/*
 * Output @k of @rec as the run made it, whole, if it is still that: one
 * attached (a write would have detached it), or one kept from the slab
 * whose version is the run's.
 */
static struct tp_tensor *whole_out(const struct tp_lin_rec *rec, unsigned k)
{
	struct tp_tensor *w = rec->out[k];
	const struct tp_lin_node *n;

	if (!w && rec->whole && (w = rec->whole[k])) {
		n = w->lin.p;
		if (!n || n->version != rec->whole_version[k])
			return NULL;
	}
	return w && !w->dead && !tp_pager_has_evicted(w) ? w : NULL;
}

/* Every output the cut does not cut, as whole_out() finds it. */
static bool wholes_there(const struct tp_lin_rec *rec,
			 const struct tp_op_split *cut)
{
	for (unsigned k = 0; k < rec->n_out; k++)
		if (!tp_lin_is_cut(cut->out, k) && !whole_out(rec, k))
			return false;
	return true;
}

/*
 * @rec's cut, if it replays by rows alone: an op local to its rows (every
 * output cut, no sums), or one whose last pass of parts that sum only
 * reads the whole outputs (TP_OP_SPLIT_LAST_READS), those still there.
 */
static bool rows_cut(struct tp_lineage *lin, const struct tp_lin_rec *rec,
		     struct tp_op_split *cut)
{
	struct tp_tensor *few[8] = { 0 }, **in = few;
	unsigned flags = rec->type->flags;
	bool ok;

	if (!rec->replayable ||
	    !(flags & (TP_OP_SPLIT_LOCAL | TP_OP_SPLIT_LAST_READS)))
		return false;
	if (rec->n_in > sizeof(few) / sizeof(few[0]) &&
	    !(in = calloc(rec->n_in, sizeof(*in))))
		return false;
	for (unsigned k = 0; k < rec->n_in; k++)
		in[k] = rec->in[k].t;
	ok = tp_lin_split_cut(lin, rec->type, rec->params, rec->params_len,
			      in, rec->n_in, rec->out_bytes, rec->n_out, cut);
	if (in != few)
		free(in);
	if (!ok)
		return false;
	if (!(flags & TP_OP_SPLIT_LOCAL))
		return cut->sums && cut->passes > 1 && wholes_there(rec, cut);
	if (cut->sums)
		return false;
	for (unsigned k = 0; k < rec->n_out; k++)
		if (!tp_lin_is_cut(cut->out, k))
			return false;
	return true;
}

/* Whether rows of @t regenerate alone, @depth down a chain; *@cut: how. */
static bool regenerable_cut(struct tp_lineage *lin, const struct tp_tensor *t,
			    unsigned depth, struct tp_op_split *cut)
{
	const struct tp_lin_rec *rec = t->lin.rec;

	if (depth >= ROWS_MAX_DEPTH || !tp_lineage_can_regenerate(lin, t) ||
	    !rows_cut(lin, rec, cut) || !tp_lin_is_cut(cut->out, t->lin.out))
		return false;
	for (unsigned k = 0; k < rec->n_in; k++) {
		const struct tp_lin_use *u = &rec->in[k];

		/* Read as the record read it, or not at all. */
		if (u->version != u->node->version)
			return false;
	}
	return true;
}

static bool regenerable(struct tp_lineage *lin, const struct tp_tensor *t,
			unsigned depth)
{
	struct tp_op_split cut;

	return regenerable_cut(lin, t, depth, &cut);
}

bool tp_lin_rows_regenerable(struct tp_lineage *lin,
			     const struct tp_tensor *t)
{
	return regenerable(lin, t, 0);
}

/*
 * What regenerating rows of @t holds at most, as bytes per byte of @t
 * asked for (*@ratio) and bytes whatever the rows (*@fixed): its inputs
 * are taken in order, each held once made (a cut one's rows, or a whole
 * one) while the next is made, and all of them beside the outputs (cut
 * ones' rows in scratch, whole ones read) at the launch; the fixed part
 * summed over the chain, an upper bound.
 */
static void rows_cost(struct tp_lineage *lin, const struct tp_tensor *t,
		      unsigned depth, double *ratio, double *fixed)
{
	const struct tp_lin_rec *rec = t->lin.rec;
	struct tp_op_split cut;
	double held = 0, peak = 0, rb;

	*ratio = 1;
	*fixed = 0;
	if (!rows_cut(lin, rec, &cut))
		return;
	rb = (double)t->bytes / (double)cut.rows;
	for (unsigned k = 0; k < rec->n_in; k++) {
		const struct tp_tensor *u = rec->in[k].t;
		double ur = (double)u->bytes / (double)cut.rows, r2, f2;

		if (!tp_lin_is_cut(cut.in, k)) {
			*fixed += (double)u->bytes;
			continue;
		}
		if (tp_pager_has_evicted(u) && regenerable(lin, u, depth + 1)) {
			rows_cost(lin, u, depth + 1, &r2, &f2);
			if (held + r2 * ur > peak)
				peak = held + r2 * ur;
			*fixed += f2;
		}
		held += ur;
	}
	for (unsigned k = 0; k < rec->n_out; k++) {
		if (tp_lin_is_cut(cut.out, k))
			held += (double)rec->out_bytes[k] / (double)cut.rows;
		else
			*fixed += (double)rec->out_bytes[k];
	}
	*ratio = (held > peak ? held : peak) / rb;
}

void tp_lin_rows_cost(struct tp_lineage *lin, const struct tp_tensor *t,
		      double *ratio, size_t *fixed)
{
	double f;

	rows_cost(lin, t, 0, ratio, &f);
	*fixed = (size_t)f;
}

/* A scratch tensor of @bytes, acquired for writing. */
static struct tp_tensor *scratch_new(struct tp_lineage *lin, size_t bytes,
				     void **addr)
{
	struct tp_tensor *s;
	int ret;

	s = tp_pager_tensor_new(lin->pg, bytes, TP_UNCOMPUTABLE | TP_SCRATCH |
				TP_KIND_WORKSPACE);
	if (!s)
		return NULL;
	ret = tp_pager_acquire(lin->pg, s, 0, bytes, TP_WRITE, addr);
	if (ret) {
		tp_pager_tensor_free(lin->pg, s);
		errno = -ret;
		return NULL;
	}
	return s;
}

void tp_lin_rows_put(struct tp_lineage *lin, struct tp_tensor *s)
{
	if (!s)
		return;
	tp_pager_release(lin->pg, s, 0, s->bytes);
	tp_pager_tensor_free(lin->pg, s);
}

/* What one replay of rows holds until its launch is done. */
struct rows_io {
	struct tp_tensor *t;	/* acquired (a range of it, or whole) */
	size_t off, len;
	bool scratch;		/* t is ours: released and freed */
};

static void rows_io_put(struct tp_lineage *lin, struct rows_io *io,
			unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (!io[k].t)
			continue;
		if (io[k].scratch)
			tp_lin_rows_put(lin, io[k].t);
		else
			tp_pager_release(lin->pg, io[k].t, io[k].off,
					 io[k].len);
		io[k].t = NULL;
	}
}

static int regen_rows(struct tp_lineage *lin, struct tp_tensor *t,
		      size_t off, size_t len, unsigned depth,
		      struct tp_tensor **sc, char **addr);

/*
 * Input @k of @rec for rows [@a, @b) of its cut (@rows rows): that range
 * of it, or of a scratch its rows were regenerated into; the whole of an
 * input the cut does not cut.
 */
static int rows_input(struct tp_lineage *lin, const struct tp_lin_rec *rec,
		      const struct tp_op_split *cut, unsigned k, size_t a,
		      size_t b, unsigned depth, struct rows_io *io,
		      void **addr, size_t *len)
{
	struct tp_tensor *u = rec->in[k].t;
	size_t rb = tp_lin_is_cut(cut->in, k) ? u->bytes / cut->rows : 0;
	size_t off = rb ? a * rb : 0;
	int ret;

	*len = rb ? (b - a) * rb : u->bytes;
	/* Evicted and made by another such op: its rows alone too. One
	 * made otherwise comes back whole, by the acquire. */
	if (rb && tp_pager_has_evicted(u) && regenerable(lin, u, depth + 1)) {
		char *p;

		ret = regen_rows(lin, u, off, *len, depth + 1, &io->t, &p);
		if (ret)
			return ret;
		io->scratch = true;
		*addr = p;
		return 0;
	}
	ret = tp_pager_acquire(lin->pg, u, off, *len, TP_READ, addr);
	if (ret)
		return ret;
	io->t = u;
	io->off = off;
	io->len = *len;
	io->scratch = false;
	return 0;
}

/*
 * Room for @need pages of scratch from the inputs a replay of rows holds
 * by a range (@n of @io): a tensor someone pins is no victim of the
 * pager's, whatever of it lies outside the range, and an input a replay
 * before brought back whole would hold the room. Its rows before the
 * range, read, leave as the policy has rows read leave
 * (tp_pager_rows_done()); those after it, which the next parts read,
 * leave for host swap, or are evicted where they cannot go there.
 */
static void room_from_inputs(struct tp_lineage *lin, const struct rows_io *io,
			     unsigned n, size_t need)
{
	struct tp_pager *pg = lin->pg;

	for (unsigned k = 0; k < n && !tp_pager_fits_now(pg, need); k++) {
		struct tp_tensor *u = io[k].t;
		size_t end = io[k].off + io[k].len;

		if (!u || io[k].scratch || io[k].len == u->bytes ||
		    !u->resident_pages)
			continue;
		if (io[k].off)
			tp_pager_rows_done(pg, u, 0, io[k].off, false);
		if (end < u->bytes &&
		    tp_pager_offload_range(pg, u, end, u->bytes - end))
			tp_pager_evict_range(pg, u, end, u->bytes - end);
	}
}

/*
 * Bytes [@off, @off + @len) of @t, regenerated into a scratch tensor
 * (*@sc, acquired; *@addr: where byte @off of @t's contents is in it).
 */
static int regen_rows(struct tp_lineage *lin, struct tp_tensor *t,
		      size_t off, size_t len, unsigned depth,
		      struct tp_tensor **sc, char **addr)
{
	const struct tp_lin_rec *rec = t->lin.rec;
	unsigned n_in, n_out = 0, k, mine = t->lin.out;
	struct tp_lin_part part = { 0 };
	struct rows_io *io = NULL;
	struct tp_op_split cut;
	void **in_addr = NULL, **out_addr;
	size_t *in_len = NULL, *out_len, *whole = NULL, rb, a, b, need;
	uint64_t ns = 0;
	int ret = -ENOMEM;

	*sc = NULL;
	if (!regenerable_cut(lin, t, depth, &cut))
		return -ENOMEM;
	n_in = rec->n_in;
	rb = t->bytes / cut.rows;
	a = off / rb;
	b = (off + len + rb - 1) / rb;
	/* Parts that sum begin at a multiple of the granule. */
	if (cut.sums && cut.granule > 1)
		a = a / cut.granule * cut.granule;
	io = calloc(n_in + rec->n_out, sizeof(*io));
	in_addr = calloc(n_in + rec->n_out, sizeof(*in_addr));
	in_len = calloc(2 * n_in + rec->n_out, sizeof(*in_len));
	if (!io || !in_addr || !in_len)
		goto out;
	out_addr = in_addr + n_in;
	out_len = in_len + n_in;
	whole = out_len + rec->n_out;
	for (k = 0; k < n_in; k++) {
		whole[k] = rec->in[k].t->bytes;
		ret = rows_input(lin, rec, &cut, k, a, b, depth, &io[k],
				 &in_addr[k], &in_len[k]);
		if (ret)
			goto out;
	}
	/* The cut outputs' rows, each in scratch of its own. */
	for (k = 0, need = 0; k < rec->n_out; k++) {
		if (!tp_lin_is_cut(cut.out, k))
			continue;
		out_len[k] = (b - a) * (rec->out_bytes[k] / cut.rows);
		need += tp_pager_pages_for(lin->pg, out_len[k]);
	}
	room_from_inputs(lin, io, n_in, need);
	/*
	 * Every cut output into scratch, the one asked for kept; a whole one
	 * (what a last pass reads) is the run's own, read.
	 */
	for (n_out = 0; n_out < rec->n_out; n_out++) {
		struct rows_io *o = &io[n_in + n_out];
		struct tp_tensor *w = whole_out(rec, n_out);

		if (!tp_lin_is_cut(cut.out, n_out)) {
			ret = w ? tp_pager_acquire(lin->pg, w, 0, w->bytes,
						   TP_READ | TP_ACQ_NO_REGEN,
						   &out_addr[n_out]) : -ENOMEM;
			if (ret)
				goto out;
			out_len[n_out] = w->bytes;
			o->t = w;
			o->off = 0;
			o->len = w->bytes;
			continue;
		}
		o->t = scratch_new(lin, out_len[n_out], &out_addr[n_out]);
		if (!o->t) {
			ret = -errno;
			goto out;
		}
		o->scratch = true;
	}
	/* A part as tp_op_launch knows them: first, middle or last; of the
	 * last pass where the parts sum. */
	part.row0 = a;
	part.rows = b - a;
	part.total = cut.rows;
	part.part = a ? 1 : 0;
	part.parts = part.part + 1 + (b < cut.rows);
	part.whole_in_bytes = whole;
	part.sums = cut.sums;
	part.passes = cut.sums ? cut.passes : 1;
	part.pass = part.passes - 1;
	ret = tp_lin_launch(lin, rec->type, rec->params, rec->params_len,
			    in_addr, in_len, n_in, out_addr, out_len,
			    rec->n_out, true, &part, &ns);
	if (ret)
		goto out;
	tp_pager_note_recompute(lin->pg, ns);
	lin->st.replay_ns += ns;
	lin->st.replays++;
	lin->st.row_replays++;
	tp_pager_note_rows(lin->pg);
	*sc = io[n_in + mine].t;
	io[n_in + mine].t = NULL;
	*addr = (char *)out_addr[mine] + (off - a * rb);
out:
	if (io) {
		rows_io_put(lin, io, n_in);
		rows_io_put(lin, io + n_in, n_out);
	}
	free(io);
	free(in_addr);
	free(in_len);
	return ret;
}

int tp_lin_regen_rows(struct tp_lineage *lin, struct tp_tensor *t,
		      size_t off, size_t len, struct tp_tensor **sc,
		      char **addr)
{
	if (!len || off > t->bytes || len > t->bytes - off)
		return -EINVAL;
	return regen_rows(lin, t, off, len, 0, sc, addr);
}
