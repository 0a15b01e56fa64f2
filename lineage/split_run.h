/* SPDX-License-Identifier: MIT */
/*
 * An op run in parts (lineage/op_split.c), as the files that run it
 * share it: what it holds of each tensor, and where its parts begin.
 * How many parts and in which way is split_fit.c's; running them,
 * op_split.c's.
 */
#ifndef TP_LINEAGE_SPLIT_RUN_H
#define TP_LINEAGE_SPLIT_RUN_H

#include "lineage/lineage_int.h"

struct split_io {
	struct tp_tensor *t;
	size_t row_bytes;	/* 0: whole */
	bool stream;		/* a part holds its rows alone */
	/*
	 * Streaming and evicted: a part's rows are regenerated alone into
	 * @sc (regen_rows.c), the tensor left as it is.
	 */
	bool regen;
	struct tp_tensor *sc;
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
	/*
	 * A part's rows of an evicted input may be regenerated alone: where
	 * regenerating it whole found no room (tp_lin_rows_regenerable()).
	 */
	bool stream_regen;
	/* The cut outputs' rows written leave for host swap between parts. */
	bool out_leave;
	/*
	 * A run resumed in smaller parts: the rows from @from are run in
	 * parts numbered from @base (struct tp_lin_part counts them all).
	 */
	size_t from;
	unsigned base;
	struct split_io *in, *out;
	struct tp_tensor *const *args;	/* the inputs as given */
	unsigned *order;		/* the order part 0 holds them in */
	unsigned n_in, n_out;
	void **in_addr, **out_addr;
	size_t *in_len, *out_len, *whole_in;
};

/* Whether @k is the first of the inputs holding its tensor. */
static inline bool tp_split_first_use(const struct split_run *r, unsigned k)
{
	for (unsigned j = 0; j < k; j++)
		if (r->in[j].t == r->in[k].t)
			return false;
	return true;
}

/*
 * The first row of part @i of the @parts the rows from r->from are run
 * in, at a multiple of the granule.
 */
static inline size_t tp_split_part_row(const struct split_run *r, unsigned i,
					unsigned parts)
{
	size_t g = r->granule, rows = r->s->rows, left = rows - r->from;
	size_t row = r->from + (left + g - 1) / g * i / parts * g;

	return row < rows ? row : rows;
}

/* Granules in the rows from @from: the most parts they make. */
static inline size_t tp_split_part_units(const struct split_run *r,
					 size_t from)
{
	return (r->s->rows - from + r->granule - 1) / r->granule;
}

/*
 * tp_split_fit() - the fewest parts from @want on that fit the room there
 * is now, with the inputs' stream, r->sums, r->out_leave and what goes
 * with them set for the way they run; 0 when no number does.
 */
unsigned tp_split_fit(struct split_run *r, unsigned want);

/*
 * tp_split_rows_may_help() - whether a cut input is evicted and its rows
 * may be regenerated alone (lineage.regen_rows, regen_rows.c): a run that
 * found no room for it whole may try again so (r->stream_regen).
 */
bool tp_split_rows_may_help(const struct split_run *r);

/*
 * Room for the parts, from the op's own rows (split_room.c):
 * tp_split_part_room() before part @i of @pass holds its rows [@r0, @r1)
 * (@last: of the last pass); tp_split_drop_read_rows() once a part of the
 * last pass, rows [@r0, @r1), ran, before the next, [@r1, @r2), holds
 * its; tp_split_offload_read_rows() the same in a pass before the last.
 */
void tp_split_part_room(struct split_run *r, unsigned pass, unsigned i,
			bool last, size_t r0, size_t r1);
void tp_split_drop_read_rows(struct split_run *r, size_t r0, size_t r1,
			     size_t r2);
void tp_split_offload_read_rows(struct split_run *r, size_t r1, size_t r2);

#endif /* TP_LINEAGE_SPLIT_RUN_H */
