/* SPDX-License-Identifier: MIT */
/*
 * The main() of the configuration fuzz harness outside libFuzzer: a TAP
 * program that replays the committed corpus (tests/fuzz/corpus-conf/: a
 * file named ok-* must be accepted, bad-* refused, any other only keep the
 * invariants), then mutations of it from a printed seed ($TP_FUZZ_SEED
 * reproduces a run). With arguments, it replays those files instead, such
 * as a crash found by make fuzz.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fuzz/conf-fuzz.h"
#include "tests/tap.h"

#define MAX_INPUTS 512
#define MUTANTS 20000

struct input {
	char name[256];
	uint8_t *data;
	size_t size;
};

static struct input inputs[MAX_INPUTS];
static size_t ninputs;

static int load(const char *path, const char *name)
{
	struct input *in = &inputs[ninputs];
	FILE *f = fopen(path, "rb");
	long len;

	if (!f || ninputs == MAX_INPUTS)
		goto err;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto err;
	in->data = malloc((size_t)len + 1);
	if (!in->data || fread(in->data, 1, (size_t)len, f) != (size_t)len)
		goto err;
	in->size = (size_t)len;
	snprintf(in->name, sizeof(in->name), "%s", name);
	fclose(f);
	ninputs++;
	return 0;
err:
	if (f)
		fclose(f);
	return -1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->name,
		      ((const struct input *)b)->name);
}

/* xorshift64*: a reproducible stream from the printed seed. */
static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

/* Bytes that matter to the parser, to splice in more often than noise. */
static const char special[] = "=,#;\n\r\t %KMGTkmgt.-+0123456789\0\xff";

static size_t mutate(const struct input *in, uint8_t *out, size_t cap)
{
	size_t n = in->size < cap ? in->size : cap;
	unsigned edits = 1 + next() % 4;

	memcpy(out, in->data, n);
	while (edits--) {
		size_t at = n ? next() % n : 0;
		uint8_t b = next() % 2 ? (uint8_t)special[next() % (sizeof(special) - 1)]
				       : (uint8_t)next();

		switch (next() % 4) {
		case 0:		/* replace */
			if (n)
				out[at] = b;
			break;
		case 1:		/* insert */
			if (n < cap) {
				memmove(out + at + 1, out + at, n - at);
				out[at] = b;
				n++;
			}
			break;
		case 2:		/* delete */
			if (n) {
				memmove(out + at, out + at + 1, n - at - 1);
				n--;
			}
			break;
		default:	/* splice another input's tail */
			if (ninputs) {
				const struct input *o = &inputs[next() % ninputs];
				size_t from = o->size ? next() % o->size : 0;
				size_t len = o->size - from;

				if (at + len > cap)
					len = cap - at;
				memcpy(out + at, o->data + from, len);
				if (at + len > n)
					n = at + len;
			}
			break;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	const char *seed_env = getenv("TP_FUZZ_SEED");
	char dir[1024], path[2048];
	unsigned accepted = 0;
	uint8_t *buf;
	DIR *d;

	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (load(argv[i], argv[i]))
				bail_out("cannot read %s", argv[i]);
		plan_tests((unsigned)ninputs);
		for (size_t k = 0; k < ninputs; k++)
			ok(conf_fuzz_one(inputs[k].data, inputs[k].size) >= 0,
			   "%s: invariants hold", inputs[k].name);
		return exit_status();
	}

	snprintf(dir, sizeof(dir), "%.900s/tests/fuzz/corpus-conf",
		 top ? top : "..");
	d = opendir(dir);
	if (!d)
		plan_skip_all("no corpus in %s", dir);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (load(path, e->d_name))
			bail_out("cannot read %s", path);
	}
	closedir(d);
	qsort(inputs, ninputs, sizeof(inputs[0]), by_name);

	plan_tests((unsigned)ninputs + 1);
	for (size_t k = 0; k < ninputs; k++) {
		const struct input *in = &inputs[k];
		int acc = conf_fuzz_one(in->data, in->size);

		if (!strncmp(in->name, "ok-", 3))
			ok(acc == 1, "%s: accepted", in->name);
		else if (!strncmp(in->name, "bad-", 4))
			ok(acc == 0, "%s: refused", in->name);
		else
			ok(1, "%s: invariants hold", in->name);
	}

	rng = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);
	if (!rng)
		rng = 1;
	diag("mutations: seed %llu (TP_FUZZ_SEED to reproduce)",
	     (unsigned long long)rng);
	buf = malloc(8192);
	if (!buf)
		bail_out("malloc");
	for (unsigned i = 0; ninputs && i < MUTANTS; i++) {
		size_t len = mutate(&inputs[next() % ninputs], buf, 8192);

		accepted += (unsigned)conf_fuzz_one(buf, len);
	}
	ok(1, "%u mutations keep every invariant (%u accepted)", MUTANTS,
	   accepted);
	free(buf);
	for (size_t k = 0; k < ninputs; k++)
		free(inputs[k].data);
	return exit_status();
}
