// SPDX-License-Identifier: MIT
/*
 * CPU embedding lookup. The backward op scatters token gradients into the
 * table in token order, so repeated tokens always sum in the same order.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "kernels/kernel.h"

static int check_idx(const int32_t *idx, uint32_t n, uint32_t vocab)
{
	uint32_t t;

	for (t = 0; t < n; t++)
		if (idx[t] < 0 || (uint32_t)idx[t] >= vocab)
			return -EINVAL;
	return 0;
}

int tp_cpu_embedding(const struct tp_op_launch *l)
{
	const struct tp_embedding_params *p = TP_PARAMS(l, tp_embedding_params);
	const int32_t *idx = l->in[1];
	size_t row = (size_t)p->dim * sizeof(float);
	uint32_t t;

	if (check_idx(idx, p->n, p->vocab))
		return -EINVAL;
	for (t = 0; t < p->n; t++)
		memcpy(TP_OUT(l, 0) + (size_t)t * p->dim,
		       TP_IN(l, 0) + (size_t)idx[t] * p->dim, row);
	return 0;
}

int tp_cpu_embedding_bwd(const struct tp_op_launch *l)
{
	const struct tp_embedding_params *p = TP_PARAMS(l, tp_embedding_params);
	const int32_t *idx = l->in[1];
	float *dt = TP_OUT(l, 0);
	uint32_t t, j;

	if (check_idx(idx, p->n, p->vocab))
		return -EINVAL;
	memset(dt, 0, (size_t)p->vocab * p->dim * sizeof(float));
	for (t = 0; t < p->n; t++) {
		const float *dy = TP_IN(l, 0) + (size_t)t * p->dim;
		float *row = dt + (size_t)idx[t] * p->dim;

		for (j = 0; j < p->dim; j++)
			row[j] += dy[j];
	}
	return 0;
}
