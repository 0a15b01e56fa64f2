/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "base/log.h"

static tp_log_fn log_fn;
static void *log_priv;
static enum tp_log_level log_level = TP_LOG_WARN;

TP_API void tp_set_log(tp_log_fn fn, void *priv)
{
	log_fn = fn;
	log_priv = priv;
}

void tp_log_set_level(enum tp_log_level level)
{
	log_level = level;
}

const char *tp_log_level_name(enum tp_log_level level)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	return (unsigned)level < sizeof(names) / sizeof(names[0]) ?
	       names[level] : "?";
}

void tp_log(enum tp_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > log_level && level != TP_LOG_ERROR)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(level, msg, log_priv);
	else
		fprintf(stderr, "tpager: %s: %s\n", tp_log_level_name(level), msg);
}

void tp_error(const struct tp_errors *e, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e && e->report)
		e->report(e->priv, err, msg);
	else
		tp_log(TP_LOG_ERROR, "%s", msg);
}
