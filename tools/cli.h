/* SPDX-License-Identifier: MIT */
/*
 * What the command-line tools share: their name in messages, a one-line
 * fatal error, and number parsing that rejects trailing junk.
 */
#ifndef TP_TOOLS_CLI_H
#define TP_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

/* The tool's name, defined by each tool, first on every message. */
extern const char *prog;

/* "PROG: message" on stderr, and exit 2 (bad usage). */
__attribute__((format(printf, 1, 2), noreturn))
void die(const char *fmt, ...);

/* A decimal integer in [0, @max], nothing after it. */
bool parse_uint(const char *s, unsigned long long max, unsigned long long *v);

/* Bytes with an optional K/M/G/T suffix, as the configuration reads them. */
bool parse_bytes(const char *s, uint64_t *v);

#endif /* TP_TOOLS_CLI_H */
