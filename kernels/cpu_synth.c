// SPDX-License-Identifier: MIT
/* The CPU synthetic image batch (see kernels/synth.h). */
#include "config.h"

#include <errno.h>

#include "kernels/kernel.h"
#include "kernels/synth.h"

int tp_cpu_synth_image(const struct tp_op_launch *l)
{
	const struct tp_synth_params *p = TP_PARAMS(l, tp_synth_params);
	const int32_t *lab = (const int32_t *)l->in[0];
	float *x = TP_OUT(l, 0);
	uint32_t i;

	for (i = 0; i < p->n; i++)
		if (lab[i] < 0 || (uint32_t)lab[i] >= p->classes)
			return -EINVAL;
	for (i = 0; i < p->n; i++)
		for (uint64_t j = 0; j < p->per; j++)
			x[(uint64_t)i * p->per + j] =
				tp_synth_value(p->seed, p->draw,
					       (uint32_t)lab[i], i, p->per, j);
	return 0;
}
