// SPDX-License-Identifier: MIT
/*
 * Fuzz harness of the DTR log importer (and its JSON parser). Built like
 * tests/fuzz/trace-fuzz.c; its corpus is tests/fuzz/corpus/dtr.
 */
#include "config.h"

#include "tests/fuzz/trace-fuzz-check.h"
#include "tests/fuzz/trace-fuzz.h"

const char trace_fuzz_corpus[] = "dtr";

int trace_fuzz_one(const uint8_t *data, size_t size)
{
	return fuzz_parse(tp_trace_parse_dtr, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	trace_fuzz_one(data, size);
	return 0;
}
