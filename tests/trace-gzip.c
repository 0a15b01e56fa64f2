// SPDX-License-Identifier: MIT
/*
 * Compressed traces: gzip is recognised by its content, not its name, and
 * decompressed in the process through zlib (with no gzip(1) on $PATH);
 * joined members read as one; a truncated or corrupt stream, or bytes
 * after it, is an error (-EIO) naming the file; a pipe is read once.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZLIB_CONST
#include <zlib.h>

#include "trace/trace.h"
#include "tests/tap.h"

static char dir[] = "/tmp/tp-trace-gzip-XXXXXX";

static const char text[] =
	"tpager-trace 1\n"
	"tensor 0 64 input\n"
	"op f 100 0 => 1:128:activation,computable\n"
	"free 0\n"
	"free 1\n";

static const char dtr[] =
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x1\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"64\",\"NAME\":\"x1\"}\n";

/* @len bytes of @s as one gzip member, in a malloc()ed buffer. */
static unsigned char *gz(const void *s, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = len + len / 8 + 64;
	unsigned char *out = malloc(cap);

	if (!out || deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
		bail_out("deflateInit2");
	z.next_in = s;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		bail_out("deflate");
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static const char *put(const char *name, const void *data, size_t len)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		bail_out("cannot write %s", path);
	return path;
}

/* Load @len bytes written to @name; @t is set on success. */
static int load(const char *name, const void *data, size_t len,
		enum tp_trace_format *fmt, struct tp_trace **t,
		struct tp_trace_error *err)
{
	const char *p = put(name, data, len);
	int rc;

	*fmt = TP_TRACE_FMT_UNKNOWN;
	*t = NULL;
	memset(err, 0, sizeof(*err));
	rc = tp_trace_load(p, fmt, t, err);
	unlink(p);
	return rc;
}

static bool gzip_error(int rc, const struct tp_trace_error *err,
		       const char *why)
{
	char want[160];

	snprintf(want, sizeof(want), "not a valid gzip file: %s", why);
	return rc == -EIO && err->line == 0 && strstr(err->file, "/z") &&
	       !strcmp(err->reason, want);
}

static void test_content(void)
{
	enum tp_trace_format fmt;
	struct tp_trace_error err;
	struct tp_trace *t;
	unsigned char *z;
	size_t zlen;
	int rc;

	z = gz(text, sizeof(text) - 1, &zlen);
	rc = load("z.trace", z, zlen, &fmt, &t, &err);
	ok(!rc && fmt == TP_TRACE_FMT_TEXT && t->n_ops == 1 &&
	   t->n_tensors == 2, "a gzipped trace without .gz in its name");
	tp_trace_free(t);
	free(z);

	rc = load("z.trace.gz", text, sizeof(text) - 1, &fmt, &t, &err);
	ok(!rc && fmt == TP_TRACE_FMT_TEXT && t->n_ops == 1,
	   "a plain trace named .gz");
	tp_trace_free(t);

	z = gz(dtr, sizeof(dtr) - 1, &zlen);
	rc = load("z.log", z, zlen, &fmt, &t, &err);
	ok(!rc && fmt == TP_TRACE_FMT_DTR && t->n_tensors == 1 &&
	   t->tensors[0].size == 64, "a gzipped DTR log, detected as DTR");
	tp_trace_free(t);
	free(z);
}

/* Two members one after the other (cat a.gz b.gz) read as one text. */
static void test_members(void)
{
	size_t half = 33, l1, l2;
	unsigned char *a = gz(text, half, &l1);
	unsigned char *b = gz(text + half, sizeof(text) - 1 - half, &l2);
	unsigned char *both = malloc(l1 + l2 + 4);
	char *buf = NULL;
	size_t len = 0;
	const char *p;
	int rc;

	if (!both)
		bail_out("out of memory");
	memcpy(both, a, l1);
	memcpy(both + l1, b, l2);
	p = put("z.joined", both, l1 + l2);
	rc = tp_trace_read_file(p, &buf, &len, NULL);
	unlink(p);
	ok(!rc && len == sizeof(text) - 1 && !memcmp(buf, text, len),
	   "two members read as one text");
	free(buf);

	/* Anything but another member after the stream is an error. */
	memcpy(both + l1, "junk", 4);
	{
		enum tp_trace_format fmt;
		struct tp_trace_error err;
		struct tp_trace *t;

		rc = load("z.tail", both, l1 + 4, &fmt, &t, &err);
		ok(gzip_error(rc, &err, "data after the end of the stream") &&
		   !t, "bytes after the stream: %s", err.reason);
		both[l1] = 0;
		rc = load("z.zero", both, l1 + 1, &fmt, &t, &err);
		ok(gzip_error(rc, &err, "data after the end of the stream") &&
		   !t, "one zero byte after the stream: %s", err.reason);
	}
	free(a);
	free(b);
	free(both);
}

/* Cut anywhere past the magic: truncated, never a partial trace. */
static void test_truncated(void)
{
	enum tp_trace_format fmt;
	struct tp_trace_error err;
	struct tp_trace *t;
	unsigned char *z;
	size_t zlen, bad = 0, first_bad = 0;

	z = gz(text, sizeof(text) - 1, &zlen);
	for (size_t n = 2; n < zlen; n++) {
		int rc = load("z.cut", z, n, &fmt, &t, &err);

		if (!gzip_error(rc, &err, "truncated") || t) {
			if (!bad++)
				first_bad = n;
			tp_trace_free(t);
		}
	}
	ok(!bad, "every cut of the %zu-byte stream (2 to %zu bytes) is a truncated gzip file, -EIO (%zu not, first at %zu)",
	   zlen, zlen - 1, bad, first_bad);
	free(z);
}

/* A changed byte past the fixed header is caught, by inflate or the CRC. */
static void test_corrupt(void)
{
	enum tp_trace_format fmt;
	struct tp_trace_error err;
	struct tp_trace *t;
	unsigned char *z;
	size_t zlen, bad = 0, first_bad = 0;
	int rc;

	z = gz(text, sizeof(text) - 1, &zlen);
	z[zlen - 8] ^= 1;	/* the CRC-32 */
	rc = load("z.crc", z, zlen, &fmt, &t, &err);
	ok(gzip_error(rc, &err, "incorrect data check") && !t,
	   "a wrong CRC: %s", err.reason);
	z[zlen - 8] ^= 1;
	z[zlen - 4] ^= 1;	/* the length */
	rc = load("z.len", z, zlen, &fmt, &t, &err);
	ok(gzip_error(rc, &err, "incorrect length check") && !t,
	   "a wrong length: %s", err.reason);
	z[zlen - 4] ^= 1;
	z[2] = 7;		/* the method: deflate is 8 */
	rc = load("z.method", z, zlen, &fmt, &t, &err);
	ok(gzip_error(rc, &err, "unknown compression method") && !t,
	   "an unknown method: %s", err.reason);
	z[2] = 8;

	for (size_t i = 10; i < zlen; i++) {
		z[i] ^= 0xa5;
		rc = load("z.flip", z, zlen, &fmt, &t, &err);
		if (rc != -EIO || t || err.line ||
		    strncmp(err.reason, "not a valid gzip file: ", 23)) {
			if (!bad++)
				first_bad = i;
			tp_trace_free(t);
		}
		z[i] ^= 0xa5;
	}
	ok(!bad, "every byte of the data and trailer changed: -EIO (%zu not, first at %zu)",
	   bad, first_bad);
	free(z);
}

/* A trace far larger than its compressed form: the output grows. */
static void test_large(void)
{
	size_t cap = 4u << 20, n = 0, zlen;
	char *big = malloc(cap);
	enum tp_trace_format fmt;
	struct tp_trace_error err;
	struct tp_trace *t;
	unsigned char *z;
	unsigned i;
	int rc;

	if (!big)
		bail_out("out of memory");
	/* Comments compress a thousandfold, far past the first guess. */
	n += (size_t)snprintf(big + n, cap - n, "tpager-trace 1\n");
	while (n < cap / 2)
		n += (size_t)snprintf(big + n, cap - n,
				      "# the same comment, line after line\n");
	for (i = 0; n < cap - 64; i++)
		n += (size_t)snprintf(big + n, cap - n,
				      "tensor %u 4096 input\nfree %u\n", i, i);
	z = gz(big, n, &zlen);
	rc = load("z.big", z, zlen, &fmt, &t, &err);
	ok(!rc && t->n_tensors == i,
	   "%zu bytes from %zu compressed: %u tensors", n, zlen, i);
	tp_trace_free(t);
	free(z);
	free(big);
}

/* /dev/stdin on a pipe: gzip is told from bytes read once, not reopened. */
static void test_pipe(void)
{
	enum tp_trace_format fmt = TP_TRACE_FMT_UNKNOWN;
	struct tp_trace_error err;
	struct tp_trace *t = NULL;
	int fd[2], saved = dup(0), rc;
	unsigned char *z;
	size_t zlen;

	z = gz(text, sizeof(text) - 1, &zlen);
	for (int compressed = 0; compressed < 2; compressed++) {
		const void *data = compressed ? (const void *)z : text;
		size_t len = compressed ? zlen : sizeof(text) - 1;

		if (saved < 0 || pipe(fd) || dup2(fd[0], 0) < 0 ||
		    write(fd[1], data, len) != (ssize_t)len)
			bail_out("pipe");
		close(fd[0]);
		close(fd[1]);
		fmt = TP_TRACE_FMT_UNKNOWN;
		rc = tp_trace_load("/dev/stdin", &fmt, &t, &err);
		ok(!rc && fmt == TP_TRACE_FMT_TEXT && t->n_ops == 1,
		   "%s trace on a pipe through /dev/stdin%s%s",
		   compressed ? "a gzipped" : "a plain", rc ? ": " : "",
		   rc ? err.reason : "");
		tp_trace_free(t);
		t = NULL;
	}
	dup2(saved, 0);
	close(saved);
	free(z);
}

int main(void)
{
	if (!mkdtemp(dir))
		bail_out("mkdtemp");
	/* gzip(1) is not needed: nothing is on the path. */
	if (setenv("PATH", dir, 1))
		bail_out("setenv");
	plan_tests(3 + 3 + 1 + 4 + 1 + 2);
	test_content();
	test_members();
	test_truncated();
	test_corrupt();
	test_large();
	test_pipe();
	rmdir(dir);
	return exit_status();
}
