/* SPDX-License-Identifier: MIT */
/*
 * The tests' deterministic generator: splitmix64, and standard normal
 * floats from two of its draws (Box-Muller). Seeded by the caller, so a
 * seed repeats a run.
 */
#ifndef TP_TESTS_TEST_RAND_H
#define TP_TESTS_TEST_RAND_H

#include <math.h>
#include <stdint.h>

static inline uint64_t tt_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline float tt_normal(uint64_t *s)
{
	double u = ((tt_rand(s) >> 11) + 1.0) / 9007199254740993.0;
	double v = (tt_rand(s) >> 11) / 9007199254740992.0;

	return (float)(sqrt(-2.0 * log(u)) * cos(2 * M_PI * v));
}

#endif /* TP_TESTS_TEST_RAND_H */
