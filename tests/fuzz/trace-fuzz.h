/* SPDX-License-Identifier: MIT */
/*
 * What a trace fuzz harness provides to the corpus replayer
 * (tests/fuzz/trace-replay.c), which gives it a main() when it is not
 * built for libFuzzer.
 */
#ifndef TP_TESTS_FUZZ_TRACE_FUZZ_H
#define TP_TESTS_FUZZ_TRACE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The corpus directory under tests/fuzz/corpus/. */
extern const char trace_fuzz_corpus[];

/*
 * Run one input. Return 1 if the parser accepted it, 0 if it rejected it
 * with a proper error; abort() on any broken invariant.
 */
int trace_fuzz_one(const uint8_t *data, size_t size);

#endif /* TP_TESTS_FUZZ_TRACE_FUZZ_H */
