/* SPDX-License-Identifier: MIT */
/*
 * The synthetic image data of the models, one element at a time, for the
 * CPU op and the CUDA kernel alike: element j of image i with label c is
 * its class's prototype plus half as much noise of the draw,
 *
 *   x = P(seed, c, j) + 0.5 N(seed, draw, i, j),
 *
 * each term a sum of four 16-bit uniforms of a counter-based hash
 * (SplitMix64's finaliser), centred and scaled to unit variance (Irwin-
 * Hall). The sum is formed in integers and turned into a float by one
 * exact conversion and one correctly rounded product, so the CPU and any
 * GPU give the same bits, and a recompute the same image.
 */
#ifndef TP_KERNELS_SYNTH_H
#define TP_KERNELS_SYNTH_H

#include <stdint.h>

#ifdef __CUDACC__
#define TP_SYNTH_FN static inline __host__ __device__
#else
#define TP_SYNTH_FN static inline
#endif

TP_SYNTH_FN uint64_t tp_synth_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Four 16-bit uniforms summed and centred: mean 0, sd 65536/sqrt(12/4). */
TP_SYNTH_FN int32_t tp_synth_ih4(uint64_t h)
{
	return (int32_t)(h & 0xffff) + (int32_t)((h >> 16) & 0xffff) +
	       (int32_t)((h >> 32) & 0xffff) + (int32_t)(h >> 48) - 131070;
}

/* 0.5 / (65536 / sqrt(3)): P + 0.5 N = (2 P' + N') times this. */
#define TP_SYNTH_SCALE ((float)(0.5 / 37837.22649))

TP_SYNTH_FN float tp_synth_value(uint64_t seed, uint64_t draw,
				 uint32_t label, uint64_t i, uint64_t per,
				 uint64_t j)
{
	uint64_t hp = tp_synth_mix(tp_synth_mix(seed * 7919u + label) + j);
	uint64_t hn = tp_synth_mix(tp_synth_mix(seed ^ (draw << 32) ^
						0xd1b54a32d192ed03ull) +
				   i * per + j);
	int32_t s = 2 * tp_synth_ih4(hp) + tp_synth_ih4(hn);

	return (float)s * TP_SYNTH_SCALE;
}

#endif
