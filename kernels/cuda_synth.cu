// SPDX-License-Identifier: MIT
/*
 * The CUDA synthetic image batch (see kernels/synth.h): the same bits as
 * the CPU op. A label out of range gives that image zeros (a kernel cannot
 * report it; see ops.h).
 */
#include "kernels/cuda_launch.cuh"
#include "kernels/synth.h"

static __global__ void synth_kernel(const int32_t *lab, float *x,
				    uint64_t seed, uint64_t draw,
				    uint32_t classes, uint64_t per, size_t n)
{
	TP_FOR_EACH(e, n) {
		uint64_t i = e / per, j = e % per;
		int32_t c = lab[i];

		x[e] = c < 0 || (uint32_t)c >= classes ? 0.0f :
		       tp_synth_value(seed, draw, (uint32_t)c, i, per, j);
	}
}

extern "C" int tp_cuda_synth_image(const struct tp_op_launch *l)
{
	const struct tp_synth_params *p = TP_PARAMS(l, tp_synth_params);
	size_t n = (size_t)p->n * p->per;

	synth_kernel<<<tp_grid(n), TP_BLOCK, 0, TP_STREAM(l)>>>(
		(const int32_t *)l->in[0], TP_OUT(l, 0), p->seed, p->draw,
		p->classes, p->per, n);
	return tp_cuda_launched(l, "synth_kernel");
}
