// SPDX-License-Identifier: MIT
/*
 * The main() of the trace fuzz harnesses when they are not built for
 * libFuzzer: a TAP program that replays the committed corpus (files named
 * ok-* must be accepted, bad-* rejected, any other (found-* inputs that
 * libFuzzer kept for their coverage) must only not break an invariant),
 * then mutations of it from a printed seed ($TP_FUZZ_SEED to change or
 * reproduce it). With arguments, it replays those files or directories
 * instead, e.g. crashes found by libFuzzer.
 */
#include "config.h"

#ifndef TP_LIBFUZZER

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/trace-fuzz.h"
#include "tests/tap.h"

/* Mutants in all, spread over the corpus files. */
#define MUTANTS_TOTAL 30000

struct input {
	char *name;
	uint8_t *data;
	size_t size;
};

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t r;

		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf)
				bail_out("out of memory");
		}
		r = fread(buf + n, 1, cap - n, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	*size = n;
	return buf;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->name,
		      ((const struct input *)b)->name);
}

/* Every regular file of @dir, sorted by name. */
static struct input *load_dir(const char *dir, size_t *n)
{
	struct input *in = NULL;
	struct dirent *d;
	size_t cap = 0;
	DIR *dp = opendir(dir);

	*n = 0;
	if (!dp)
		return NULL;
	while ((d = readdir(dp))) {
		char path[4400];
		struct stat st;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%.4000s/%.255s", dir, d->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			in = realloc(in, cap * sizeof(*in));
			if (!in)
				bail_out("out of memory");
		}
		in[*n].name = strdup(d->d_name);
		in[*n].data = slurp(path, &in[*n].size);
		if (!in[*n].name || !in[*n].data)
			bail_out("cannot read %s", path);
		(*n)++;
	}
	closedir(dp);
	qsort(in, *n, sizeof(*in), by_name);
	return in;
}

/* xorshift64*: small, seedable, the same everywhere. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static const char *const tokens[] = {
	"\n", " ", "#", "\"", "{", "}", "[", "]", ",", ":", "\\", "\\u00",
	"=>", "-", "-1", "0", "1", "255", "18446744073709551615",
	"99999999999999999999", "view=", "inplace=0", "input", "computable",
	"tensor 1 8 -", "free 0", "op f 1 0 => 9:8:-", "measure begin",
	"measure end", "iter 0", "split=", "split=2:0:0", "split=4:-:0,1",
	":-", "tpager-trace 2\n", "tpager-trace 3\n", "end\n",
	"\"INSTRUCTION\":\"RELEASE\"",
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n",
	"\"MUTATE\":[0]", "\"ALIAS\":\"0\"", "\"ARGS\":[]", "\0",
};

#define N_TOKENS (sizeof(tokens) / sizeof(tokens[0]))

/* One mutant of @src in @dst (room for src size + 256 bytes). */
static size_t mutate(uint8_t *dst, const struct input *src)
{
	size_t n = src->size, rounds = 1 + rnd() % 4;

	memcpy(dst, src->data, n);
	for (size_t r = 0; r < rounds; r++) {
		size_t pos = n ? rnd() % (n + 1) : 0;
		size_t len;

		switch (rnd() % 5) {
		case 0:	/* overwrite a byte */
			if (pos < n)
				dst[pos] = (uint8_t)rnd();
			break;
		case 1:	/* delete a run */
			len = rnd() % 16;
			if (pos + len > n)
				len = n - pos;
			memmove(dst + pos, dst + pos + len, n - pos - len);
			n -= len;
			break;
		case 2: { /* insert a token */
			const char *tk = tokens[rnd() % N_TOKENS];

			len = *tk ? strlen(tk) : 1;
			if (n + len > src->size + 256)
				break;
			memmove(dst + pos + len, dst + pos, n - pos);
			memcpy(dst + pos, tk, len);
			n += len;
			break;
		}
		case 3:	/* truncate */
			n = pos;
			break;
		case 4:	/* duplicate a line-sized run */
			len = rnd() % 64;
			if (pos + len > n)
				len = n - pos;
			if (n + len > src->size + 256)
				break;
			memmove(dst + pos + len, dst + pos, n - pos);
			n += len;
			break;
		}
	}
	return n;
}

static int replay_args(int argc, char **argv)
{
	plan_no_plan();
	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct input *in;
		size_t n;

		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) {
			in = load_dir(argv[i], &n);
		} else {
			in = calloc(1, sizeof(*in));
			n = 1;
			if (!in)
				bail_out("out of memory");
			in->name = strdup(argv[i]);
			in->data = slurp(argv[i], &in->size);
			if (!in->data)
				bail_out("cannot read %s", argv[i]);
		}
		for (size_t k = 0; k < n; k++) {
			int acc = trace_fuzz_one(in[k].data, in[k].size);

			ok(1, "%s: %s", in[k].name, acc ? "accepted" : "rejected");
			free(in[k].name);
			free(in[k].data);
		}
		free(in);
	}
	return exit_status();
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	const char *seed_env = getenv("TP_FUZZ_SEED");
	size_t n, accepted = 0, total = 0;
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 20201001;
	struct input *in;
	char dir[4400];
	uint8_t *buf;

	if (argc > 1)
		return replay_args(argc, argv);
	snprintf(dir, sizeof(dir), "%.4000s/tests/fuzz/corpus/%s",
		 top ? top : "..", trace_fuzz_corpus);
	in = load_dir(dir, &n);
	if (!n)
		plan_skip_all("no corpus in %s", dir);
	plan_tests((unsigned)n + 1);
	for (size_t k = 0; k < n; k++) {
		int acc = trace_fuzz_one(in[k].data, in[k].size);

		if (!strncmp(in[k].name, "ok-", 3))
			ok(acc == 1, "%s is accepted", in[k].name);
		else if (!strncmp(in[k].name, "bad-", 4))
			ok(acc == 0, "%s is rejected", in[k].name);
		else
			ok(1, "%s: %s, no invariant broken", in[k].name,
			   acc ? "accepted" : "rejected");
	}

	diag("mutations: seed %llu (TP_FUZZ_SEED to change)",
	     (unsigned long long)seed);
	rng_state = seed ? seed : 1;
	for (size_t k = 0; k < n; k++) {
		buf = malloc(in[k].size + 256);
		if (!buf)
			bail_out("out of memory");
		for (size_t m = 0; m < MUTANTS_TOTAL / n; m++) {
			size_t len = mutate(buf, &in[k]);

			accepted += trace_fuzz_one(buf, len);
			total++;
		}
		free(buf);
	}
	ok(1, "%zu mutants (%zu accepted): no crash, no invariant broken",
	   total, accepted);
	for (size_t k = 0; k < n; k++) {
		free(in[k].name);
		free(in[k].data);
	}
	free(in);
	return exit_status();
}

#endif /* !TP_LIBFUZZER */
