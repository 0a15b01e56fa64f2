// SPDX-License-Identifier: MIT
/*
 * Fuzz harness of the tpager-trace(5) parser. With libFuzzer:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DTP_LIBFUZZER \
 *     -I. -Iinclude -Ibuild-DIR tests/fuzz/trace-fuzz.c \
 *     $(ls trace/\*.c | grep -v replay) -lz \
 *     -o trace-fuzz && ./trace-fuzz tests/fuzz/corpus/trace
 * (the replay engine, which needs the library's core, left out).
 * Without it, tests/fuzz/trace-replay.c makes it a TAP program replaying
 * the committed corpus (and mutations of it) under make check.
 */
#include "config.h"

#include "tests/fuzz/trace-fuzz-check.h"
#include "tests/fuzz/trace-fuzz.h"

const char trace_fuzz_corpus[] = "trace";

int trace_fuzz_one(const uint8_t *data, size_t size)
{
	return fuzz_parse(tp_trace_parse, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	trace_fuzz_one(data, size);
	return 0;
}
