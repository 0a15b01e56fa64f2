// SPDX-License-Identifier: MIT
/*
 * tp_batching_run(): a part gives the whole run's bits, or is refused.
 * Without TP_BATCHING_ALONE (a GPU) a whole run is one problem at the
 * library's speed and parts of a shape whose whole run differed are
 * refused; with it (the CPU) such a whole run goes one row at a time and
 * parts never are.
 *
 * The "library" here sums each row's 64 floats: one row alone, or in a
 * problem whose row count is in a shape's set of odd sizes, in another
 * order (pairwise), as BLAS and cuDNN may pick another kernel by the
 * problem's size. Whole runs are checked once and never redone one row at
 * a time; a part of a shape whose whole run differed is refused with its
 * output untouched; a part whose own size differs is redone one row at a
 * time before anything reads it. Then random shapes, batches and cuts:
 * every part either gives the whole run's bytes or is refused. The seed
 * is printed; TPAGER_TEST_SEED=N reproduces a run.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/batching.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

#define K	64
#define MAXROWS	64

struct lib {
	uint64_t odd;		/* bit r: a problem of r rows sums pairwise */
	const float *in;	/* the rows the call reads */
	float *out;
	int fail;		/* all() returns this once */
	unsigned alls, singles, compares;
};

static float seq_sum(const float *x)
{
	float s = 0;

	for (int i = 0; i < K; i++)
		s += x[i];
	return s;
}

static float pair_sum(const float *x, int n)
{
	if (n == 1)
		return x[0];
	return pair_sum(x, n / 2) + pair_sum(x + n / 2, n - n / 2);
}

static int all(void *priv, uint32_t rows)
{
	struct lib *b = priv;
	bool pair = rows < 64 && (b->odd >> rows & 1);

	b->alls++;
	if (b->fail) {
		int rc = b->fail;

		b->fail = 0;
		return rc;
	}
	for (uint32_t r = 0; r < rows; r++)
		b->out[r] = pair ? pair_sum(b->in + r * K, K) :
				   seq_sum(b->in + r * K);
	return 0;
}

static int single(void *priv, uint32_t rows)
{
	struct lib *b = priv;

	b->singles++;
	for (uint32_t r = 0; r < rows; r++)
		b->out[r] = seq_sum(b->in + r * K);
	return 0;
}

static int compare(void *priv, const uint32_t *pick, unsigned n, bool *same)
{
	struct lib *b = priv;

	b->compares++;
	*same = true;
	for (unsigned q = 0; q < n; q++) {
		float one = seq_sum(b->in + pick[q] * K);

		if (memcmp(&one, &b->out[pick[q]], sizeof(one)))
			*same = false;
	}
	return 0;
}

static const struct tp_batching_ops ops = {
	.all = all, .single = single, .compare = compare,
};

struct key {
	char device[8];
	uint64_t shape;
};

static unsigned mode;	/* the flags of every run() */

static int run(uint64_t shape, struct lib *b, const float *in, float *out,
	       uint32_t rows, uint32_t whole)
{
	struct key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.device, "test", 5);
	k.shape = shape;
	b->in = in;
	b->out = out;
	return tp_batching_run(&k, sizeof(k), rows, whole, mode, &ops, b);
}

/*
 * Rows whose sums come out differently pairwise, every one of them (as a
 * library's other kernel changes every row, where the check samples
 * three): mixed magnitudes, drawn again until they do.
 */
static void fill(float *x, size_t rows, uint64_t *seed)
{
	for (size_t r = 0; r < rows; r++) {
		float *row = x + r * K, a, p;

		do {
			for (size_t i = 0; i < K; i++)
				row[i] = tt_normal(seed) *
					 (float)(1u << (tt_rand(seed) % 20));
			a = seq_sum(row);
			p = pair_sum(row, K);
		} while (!memcmp(&a, &p, sizeof(a)));
	}
}

static bool differs_everywhere(const float *in, uint32_t rows)
{
	for (uint32_t r = 0; r < rows; r++) {
		float a = seq_sum(in + r * K), p = pair_sum(in + r * K, K);

		if (!memcmp(&a, &p, sizeof(a)))
			return false;
	}
	return true;
}

static float in[MAXROWS * K];
static float whole_out[MAXROWS], part_out[MAXROWS];

static void test_invariant(void)
{
	struct lib b = { .odd = 0 };

	run(1, &b, in, whole_out, 8, 8);
	ok(b.alls == 1 && b.compares == 1 && b.singles == 0,
	   "an invariant shape's first whole run: one problem, checked once (all %u, compare %u, single %u)",
	   b.alls, b.compares, b.singles);
	run(1, &b, in, whole_out, 8, 8);
	ok(b.alls == 2 && b.compares == 1,
	   "its second whole run is not checked again");
	memset(part_out, 0xff, sizeof(part_out));
	ok_rc(run(1, &b, in, part_out, 3, 8) ||
	      run(1, &b, in + 3 * K, part_out + 3, 5, 8),
	      "its parts of 3 and 5 rows run");
	ok(!memcmp(part_out, whole_out, 8 * sizeof(float)),
	   "and give the whole run's bytes");
}

static void test_whole_differs(void)
{
	struct lib b = { .odd = 1ull << 8 };
	float first[8];

	ok(differs_everywhere(in, MAXROWS),
	   "every row sums differently pairwise (set-up)");
	run(2, &b, in, whole_out, 8, 8);
	memcpy(first, whole_out, sizeof(first));
	ok(b.alls == 1 && b.singles == 0 && b.compares == 1,
	   "a whole run that differs from rows alone is not redone one row at a time (all %u, single %u)",
	   b.alls, b.singles);
	ok(tp_batching_of(&(struct key){ "test", 2 }, sizeof(struct key), 8) ==
	   TP_BATCHING_DIFFERS, "and is noted as differing");
	run(2, &b, in, whole_out, 8, 8);
	ok(b.alls == 2 && b.singles == 0 && b.compares == 1 &&
	   !memcmp(first, whole_out, sizeof(first)),
	   "the next whole run is one problem with the same bytes");
	memset(part_out, 0xab, sizeof(part_out));
	ok(run(2, &b, in, part_out, 3, 8) == -ENOTSUP,
	   "a part of that shape is refused (-ENOTSUP)");
	bool untouched = true;

	for (int i = 0; i < 3; i++)
		untouched &= *(uint32_t *)&part_out[i] == 0xababababu;
	ok(b.alls == 2 && b.singles == 0 && untouched,
	   "having run nothing and written nothing");
}

static void test_part_differs(void)
{
	/* whole 8 sums in order; a problem of 5 rows pairwise */
	struct lib b = { .odd = 1ull << 5 };

	ok(differs_everywhere(in, 5), "each row of a 5-row part sums differently (set-up)");
	run(3, &b, in, whole_out, 8, 8);
	memset(part_out, 0xff, sizeof(part_out));
	b.alls = b.singles = b.compares = 0;
	ok_rc(run(3, &b, in, part_out, 5, 8) ||
	      run(3, &b, in + 5 * K, part_out + 5, 3, 8),
	      "parts of 5 and 3 rows of a shape whose whole run agreed");
	ok(b.alls == 2 && b.compares == 2 && b.singles == 1,
	   "the 5-row part was checked and redone one row at a time (all %u, compare %u, single %u)",
	   b.alls, b.compares, b.singles);
	ok(!memcmp(part_out, whole_out, 8 * sizeof(float)),
	   "the parts give the whole run's bytes");
	b.alls = b.singles = b.compares = 0;
	memset(part_out, 0xff, sizeof(part_out));
	run(3, &b, in + 2 * K, part_out, 5, 8);
	ok(b.alls == 0 && b.singles == 1 &&
	   !memcmp(part_out, whole_out + 2, 5 * sizeof(float)),
	   "a later 5-row part runs one row at a time at once, with the whole run's bytes");
	b.alls = b.singles = 0;
	run(3, &b, in + 7 * K, part_out, 1, 8);
	ok(b.alls == 0 && b.singles == 1 &&
	   !memcmp(part_out, whole_out + 7, sizeof(float)),
	   "a part of one row is a row alone");
}

static void test_errors(void)
{
	struct lib b = { .odd = 0, .fail = -EIO };

	ok(run(4, &b, in, whole_out, 8, 8) == -EIO && b.compares == 0,
	   "a whole run's error is returned, nothing checked");
	ok(tp_batching_of(&(struct key){ "test", 4 }, sizeof(struct key), 8) ==
	   TP_BATCHING_UNCHECKED, "and nothing noted");
	run(4, &b, in, whole_out, 8, 8);
	ok(b.compares == 1, "the next whole run is checked");
}

/* TP_BATCHING_ALONE: the whole run that differs goes one row at a time. */
static void test_alone(void)
{
	struct lib b = { .odd = 1ull << 8 };
	float first[8], alone[8];

	for (int r = 0; r < 8; r++)
		alone[r] = seq_sum(in + r * K);
	mode = TP_BATCHING_ALONE;
	run(5, &b, in, whole_out, 8, 8);
	memcpy(first, whole_out, sizeof(first));
	ok(b.alls == 1 && b.compares == 1 && b.singles == 1 &&
	   !memcmp(whole_out, alone, sizeof(alone)),
	   "alone: a whole run that differs is redone one row at a time, each row's bits alone (all %u, compare %u, single %u)",
	   b.alls, b.compares, b.singles);
	run(5, &b, in, whole_out, 8, 8);
	ok(b.alls == 1 && b.singles == 2 && !memcmp(first, whole_out, sizeof(first)),
	   "alone: the next whole run goes one row at a time at once, the same bytes");
	memset(part_out, 0xff, sizeof(part_out));
	ok_rc(run(5, &b, in, part_out, 3, 8) ||
	      run(5, &b, in + 3 * K, part_out + 3, 5, 8),
	      "alone: parts of 3 and 5 rows of that shape run");
	ok(!memcmp(part_out, whole_out, 8 * sizeof(float)),
	   "alone: and give the whole run's bytes");
	mode = 0;
}

/* Random shapes, batches and cuts: a part gives the whole's bytes or is
 * refused with its output untouched. */
static void test_random(uint64_t *seed)
{
	unsigned bad = 0, refused = 0, parts = 0;

	for (unsigned t = 0; t < 400; t++) {
		struct lib b = { .odd = tt_rand(seed) & tt_rand(seed) };
		uint32_t whole = 2 + tt_rand(seed) % (MAXROWS - 2);
		uint64_t shape = (mode ? 1000 : 100) + t;

		b.odd &= ~(1ull << 1);	/* a row alone is a row alone */
		run(shape, &b, in, whole_out, whole, whole);
		for (uint32_t r0 = 0; r0 < whole;) {
			uint32_t n = 1 + tt_rand(seed) % (whole - r0);
			int rc;

			if (n == whole)
				n = whole - 1;
			memset(part_out, 0xcd, sizeof(part_out));
			rc = run(shape, &b, in + r0 * K, part_out, n, whole);
			parts++;
			if (rc == -ENOTSUP) {
				refused++;
				for (uint32_t i = 0; i < n; i++)
					bad += *(uint32_t *)&part_out[i] !=
					       0xcdcdcdcd;
			} else if (rc || memcmp(part_out, whole_out + r0,
						n * sizeof(float))) {
				bad++;
			}
			r0 += n;
		}
	}
	ok(!bad, "%s: %u random parts: each gives the whole run's bytes or is refused untouched (%u refused, %u wrong)",
	   mode ? "alone" : "gpu", parts, refused, bad);
	if (mode)
		ok(!refused, "alone: none was refused (%u)", refused);
	else
		ok(refused && refused < parts,
		   "gpu: some were refused and some ran (%u of %u refused)",
		   refused, parts);
}

int main(void)
{
	const char *s = getenv("TPAGER_TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 0x5eed0b47c4ull;

	plan_tests(27);
	diag("seed %" PRIu64, seed);
	fill(in, MAXROWS, &seed);
	test_invariant();
	test_whole_differs();
	test_part_differs();
	test_errors();
	test_random(&seed);
	test_alone();
	mode = TP_BATCHING_ALONE;
	test_random(&seed);
	return exit_status();
}
