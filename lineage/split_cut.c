/* SPDX-License-Identifier: MIT */
/*
 * Whether a run of an op may go in parts, and how: the op type's split
 * callback (tp_op_run(3), Split), checked against the run's sizes.
 */
#include <stdlib.h>

#include "lineage/lineage_int.h"

/* Whether @s cuts the run sizes as tp_op_split says it must. */
static bool cut_fits(const struct tp_op_split *s, const size_t *in_bytes,
		     unsigned n_in, const size_t *out_bytes, unsigned n_out)
{
	unsigned k;

	if (s->rows < 2 || !(s->in | s->out) ||
	    (n_in < 64 && s->in >> n_in) || (n_out < 64 && s->out >> n_out))
		return false;
	for (k = 0; k < n_in; k++)
		if (tp_lin_is_cut(s->in, k) && in_bytes[k] % s->rows)
			return false;
	for (k = 0; k < n_out; k++)
		if (tp_lin_is_cut(s->out, k) && out_bytes[k] % s->rows)
			return false;
	return true;
}

bool tp_lin_split_cut(struct tp_lineage *lin, const struct tp_op_type *type,
		      const void *params, size_t params_len,
		      struct tp_tensor *const *in, unsigned n_in,
		      const size_t *out_bytes, unsigned n_out,
		      struct tp_op_split *s)
{
	size_t few[16], *in_bytes = few;
	bool ok;

	if (!(type->flags & TP_OP_SPLITTABLE) || !type->split ||
	    (type->flags & TP_OP_INPLACE) || !tp_pager_split_allowed(lin->pg))
		return false;
	/* Asked of every op a plan may cut: no allocation for most. */
	if (n_in > sizeof(few) / sizeof(few[0]))
		in_bytes = calloc(n_in, sizeof(*in_bytes));
	if (!in_bytes)
		return false;
	for (unsigned k = 0; k < n_in; k++)
		in_bytes[k] = in[k]->bytes;
	*s = (struct tp_op_split){ 0 };
	ok = !type->split(params, params_len, in_bytes, n_in, out_bytes, n_out,
			  s) && cut_fits(s, in_bytes, n_in, out_bytes, n_out);
	/* parts that sum need two granules' rows */
	if (s->granule > 1 && s->rows <= s->granule)
		s->sums = 0;
	if (in_bytes != few)
		free(in_bytes);
	return ok;
}
