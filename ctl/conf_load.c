/* SPDX-License-Identifier: MIT */
/*
 * The sources of a configuration, in order, later ones winning: built-in
 * defaults, the system file, $TPAGER_CONF, $TPAGER_OPTS, the opts string.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/conf.h"
#include "base/log.h"

#ifndef TP_SYSCONFDIR
#define TP_SYSCONFDIR "/etc"
#endif

/* A configuration file is small; this bounds what a mistake can cost
 * (TPAGER_CONF=/dev/zero). */
#define TP_CONF_FILE_MAX (1u << 20)

static const char *env(const char *name)
{
	/* Not from the environment of a set-user-ID program. */
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

const char *tp_conf_system_path(void)
{
	const char *p = env("TPAGER_SYSCONF");

	return p ? p : TP_SYSCONFDIR "/tpager.conf";
}

int tp_conf_read_file(const char *path, char **text, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= TP_CONF_FILE_MAX) {
				rc = -EFBIG;
				goto err_free;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = -ENOMEM;
				goto err_free;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto err_free;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*text = buf;
	*len = n;
	goto out_close;
err_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

int tp_conf_load_file(struct tp_conf *c, const char *path, bool optional,
		      unsigned *nerr)
{
	char *text;
	size_t len;
	int rc;

	if (nerr)
		*nerr = 0;
	rc = tp_conf_read_file(path, &text, &len);
	if (rc == -ENOENT && optional)
		return 0;
	if (rc == -EACCES && optional) {
		/* The system file may be private to root: say so, go on. */
		tp_log(TP_LOG_WARN, "%s: not read: %s", path, strerror(EACCES));
		return 0;
	}
	if (rc) {
		tp_log(TP_LOG_ERROR, "%s: cannot read: %s", path,
		       rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
		if (nerr)
			*nerr = 1;
		return -EINVAL;
	}
	rc = tp_conf_parse_text(c, text, len, path, nerr);
	free(text);
	return rc == -ENOMEM ? rc : rc ? -EINVAL : 0;
}

int tp_conf_load(struct tp_conf *c, const char *opts)
{
	const char *path;
	int rc = 0;

	tp_conf_defaults(c);
	/* Every source is read even after an error, so that one run names
	 * every mistake; the first error is returned. */
	if (tp_conf_load_file(c, tp_conf_system_path(), true, NULL))
		rc = -EINVAL;
	path = env("TPAGER_CONF");
	if (path && tp_conf_load_file(c, path, false, NULL))
		rc = -EINVAL;
	if (tp_conf_apply_opts(c, env("TPAGER_OPTS"), "TPAGER_OPTS"))
		rc = -EINVAL;
	if (tp_conf_apply_opts(c, opts, "tp_ctx_create"))
		rc = -EINVAL;
	if (!rc && tp_conf_check(c, "configuration"))
		rc = -EINVAL;
	if (!rc)
		tp_log_set_level((enum tp_log_level)c->log_level);
	return rc;
}
