/* SPDX-License-Identifier: MIT */
/* What the configuration fuzz harness gives its corpus replayer. */
#ifndef TP_TESTS_FUZZ_CONF_FUZZ_H
#define TP_TESTS_FUZZ_CONF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/*
 * Run one input through the parser. The first byte chooses what it is:
 * 'O' the rest is an opts string ("key=value,..."), 'V' the rest is one
 * "key=value" set and read back, 'S' the rest is a key to suggest for;
 * anything else: the whole input is a configuration file.
 * Return 1 when the input was accepted, 0 when it was refused with a
 * message; abort() on any broken invariant.
 */
int conf_fuzz_one(const uint8_t *data, size_t size);

#endif /* TP_TESTS_FUZZ_CONF_FUZZ_H */
