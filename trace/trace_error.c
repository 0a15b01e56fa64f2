// SPDX-License-Identifier: MIT
/* Parse errors: where ("file:line") and why. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "trace/trace_parse.h"

void tp_trace_verror(struct tp_trace_error *err, const char *file,
		     unsigned long line, const char *fmt, va_list ap)
{
	if (!err)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "<trace>");
	err->line = line;
	vsnprintf(err->reason, sizeof(err->reason), fmt, ap);
}

void tp_trace_set_error(struct tp_trace_error *err, const char *file,
			unsigned long line, const char *reason)
{
	if (!err)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "<trace>");
	err->line = line;
	snprintf(err->reason, sizeof(err->reason), "%s", reason);
}

const char *tp_trace_error_str(const struct tp_trace_error *err, char *buf,
			       size_t len)
{
	if (err->line)
		snprintf(buf, len, "%s:%lu: %s", err->file, err->line,
			 err->reason);
	else
		snprintf(buf, len, "%s: %s", err->file, err->reason);
	return buf;
}
