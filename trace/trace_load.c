// SPDX-License-Identifier: MIT
/*
 * Reading a trace file whole, decompressing it when it is gzip (known by
 * its magic bytes, not its name), and choosing its parser from its first
 * line.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/gunzip.h"
#include "trace/trace.h"
#include "trace/trace_parse.h"

enum tp_trace_format tp_trace_detect(const char *buf, size_t len)
{
	static const char magic[] = "tpager-trace";
	size_t i = 0;

	/* The first non-blank byte of the first line decides. */
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r'))
		i++;
	if (i < len && buf[i] == '{')
		return TP_TRACE_FMT_DTR;
	if (len - i >= sizeof(magic) - 1 &&
	    !memcmp(buf + i, magic, sizeof(magic) - 1) &&
	    (len - i == sizeof(magic) - 1 || buf[i + sizeof(magic) - 1] == ' ' ||
	     buf[i + sizeof(magic) - 1] == '\t'))
		return TP_TRACE_FMT_TEXT;
	return TP_TRACE_FMT_UNKNOWN;
}

static int read_all(const char *path, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = NULL, *q;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	for (;;) {
		ssize_t r;

		if (n == cap || !b) {
			if (b)
				cap *= 2;
			q = realloc(b, cap);
			if (!q) {
				rc = -ENOMEM;
				goto err;
			}
			b = q;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto err;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
err:
	free(b);
	close(fd);
	return rc;
}

int tp_trace_read_file(const char *path, char **buf, size_t *len,
		       struct tp_trace_error *err)
{
	char *raw = NULL, *data, reason[128];
	size_t raw_len = 0, data_len;
	const char *why = NULL;
	int rc;

	/* Opened and read once: a pipe (/dev/stdin) can be read only once. */
	rc = read_all(path, &raw, &raw_len);
	if (rc) {
		tp_trace_set_error(err, path, 0, strerror(-rc));
		return rc;
	}
	if (!tp_gzip_magic(raw, raw_len)) {
		*buf = raw;
		*len = raw_len;
		return 0;
	}
	rc = tp_gunzip(raw, raw_len, &data, &data_len, &why);
	free(raw);
	if (rc == -EIO) {
		snprintf(reason, sizeof(reason), "not a valid gzip file: %s",
			 why);
		tp_trace_set_error(err, path, 0, reason);
		return rc;
	}
	if (rc) {
		tp_trace_set_error(err, path, 0, strerror(-rc));
		return rc;
	}
	*buf = data;
	*len = data_len;
	return 0;
}

int tp_trace_load(const char *path, enum tp_trace_format *fmt,
		  struct tp_trace **out, struct tp_trace_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tp_trace_read_file(path, &buf, &len, err);
	if (rc)
		return rc;
	if (*fmt == TP_TRACE_FMT_UNKNOWN)
		*fmt = tp_trace_detect(buf, len);
	switch (*fmt) {
	case TP_TRACE_FMT_TEXT:
		rc = tp_trace_parse(buf, len, path, out, err);
		break;
	case TP_TRACE_FMT_DTR:
		rc = tp_trace_parse_dtr(buf, len, path, out, err);
		break;
	default:
		tp_trace_set_error(err, path, len ? 1 : 0,
				   "unknown trace format: the first line is neither 'tpager-trace N' nor a DTR JSON object");
		rc = -EINVAL;
		break;
	}
	free(buf);
	return rc;
}
