/* SPDX-License-Identifier: MIT */
/*
 * The library's messages, routed to the callback set by tp_set_log().
 * Below every layer: any of them may log.
 */
#ifndef TP_BASE_LOG_H
#define TP_BASE_LOG_H

#include "tpager.h"

__attribute__((format(printf, 2, 3)))
void tp_log(enum tp_log_level level, const char *fmt, ...);

/* Most verbose level delivered (log.level); errors always are. */
void tp_log_set_level(enum tp_log_level level);

/* "error", "warning", "info" or "debug": how a message says its level. */
const char *tp_log_level_name(enum tp_log_level level);

/*
 * Where a layer's errors go: its creator's last-error record (the
 * context's, read by tp_last_error()), handed to it at creation so that
 * it need not know the context. Without @report, errors are logged.
 */
struct tp_errors {
	void (*report)(void *priv, int err, const char *msg);
	void *priv;
};

/* tp_error() - report @err with a printf-style message to @e. */
__attribute__((format(printf, 3, 4)))
void tp_error(const struct tp_errors *e, int err, const char *fmt, ...);

#endif /* TP_BASE_LOG_H */
