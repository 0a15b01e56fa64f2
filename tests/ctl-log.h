/* SPDX-License-Identifier: MIT */
/* Capture the library's log messages in the configuration tests. */
#ifndef TP_TESTS_CTL_LOG_H
#define TP_TESTS_CTL_LOG_H

#include <stdio.h>
#include <string.h>

#include "tpager.h"

struct ctl_log {
	char text[8192];	/* every message, newline-separated */
	unsigned errors;
	unsigned warnings;
};

static struct ctl_log ctl_log;

static void ctl_log_fn(enum tp_log_level level, const char *msg, void *priv)
{
	struct ctl_log *l = priv;
	size_t used = strlen(l->text);

	if (level == TP_LOG_ERROR)
		l->errors++;
	else if (level == TP_LOG_WARN)
		l->warnings++;
	snprintf(l->text + used, sizeof(l->text) - used, "%s%s",
		 used ? "\n" : "", msg);
}

/* Start capturing afresh. */
static inline void ctl_log_reset(void)
{
	memset(&ctl_log, 0, sizeof(ctl_log));
	tp_set_log(ctl_log_fn, &ctl_log);
}

/* True when a captured message contains @needle. */
static inline int ctl_log_has(const char *needle)
{
	return strstr(ctl_log.text, needle) != NULL;
}

#endif /* TP_TESTS_CTL_LOG_H */
