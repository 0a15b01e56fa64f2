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

#endif /* TP_BASE_LOG_H */
