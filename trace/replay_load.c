// SPDX-License-Identifier: MIT
/*
 * Loading a trace for replay: plain, or gzip-compressed (the DTR logs are
 * shipped that way), decompressed through gzip(1) on a pipe so that the
 * library needs no zlib. Compression is recognised by its magic bytes,
 * not by the file name.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/replay.h"
#include "trace/trace_parse.h"

static int read_fd(int fd, char **buf, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap), *q;

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			q = realloc(b, cap * 2);
			if (!q) {
				free(b);
				return -ENOMEM;
			}
			b = q;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(b);
			return (int)r;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* gzip -dc @path, its whole output. */
static int gunzip(const char *path, char **buf, size_t *len)
{
	int pfd[2], status, ret;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return ret;
	}
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execlp("gzip", "gzip", "-dc", "--", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	ret = read_fd(pfd[0], buf, len);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			break;
	if (!ret && !(WIFEXITED(status) && !WEXITSTATUS(status))) {
		free(*buf);
		*buf = NULL;
		ret = -EIO;
	}
	return ret;
}

static int is_gzip(const char *path, bool *gz)
{
	unsigned char m[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, m, 2);
	close(fd);
	if (r < 0)
		return -errno;
	*gz = r == 2 && m[0] == 0x1f && m[1] == 0x8b;
	return 0;
}

static int read_path(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = read_fd(fd, buf, len);
	close(fd);
	return ret;
}

int tp_replay_load(const char *path, enum tp_trace_format *fmt,
		   struct tp_trace **out, struct tp_trace_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	bool gz = false;
	int ret;

	ret = is_gzip(path, &gz);
	if (!ret)
		ret = gz ? gunzip(path, &buf, &len) : read_path(path, &buf, &len);
	if (ret) {
		tp_trace_set_error(err, path, 0, ret == -EIO ?
				   "gzip -dc failed: not a valid gzip file" :
				   strerror(-ret));
		return ret;
	}
	if (*fmt == TP_TRACE_FMT_UNKNOWN)
		*fmt = tp_trace_detect(buf, len);
	switch (*fmt) {
	case TP_TRACE_FMT_TEXT:
		ret = tp_trace_parse(buf, len, path, out, err);
		break;
	case TP_TRACE_FMT_DTR:
		ret = tp_trace_parse_dtr(buf, len, path, out, err);
		break;
	default:
		tp_trace_set_error(err, path, len ? 1 : 0,
				   "unknown trace format: the first line is neither 'tpager-trace N' nor a DTR JSON object");
		ret = -EINVAL;
		break;
	}
	free(buf);
	return ret;
}
