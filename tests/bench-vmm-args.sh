#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/vmm-bench's arguments: -c sets the chunk on host, and on cuda
# (the stand-in driver, tests/vmm-fake-libcuda.c, found as libcuda.so.1)
# the header says that the device's granularity was used instead; bad
# arguments are one line and exit 2, not a backend that "does not open".
b=${top_builddir:-.}
bench="$b/bench/vmm-bench"
fake="$b/tests/.libs/libfakecuda.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-bench-vmm.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
# usage DESC PATTERN ARGS...: exit 2, the first line of stderr matches.
usage() {
	desc=$1; pat=$2; shift 2
	"$bench" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
	ok $([ $rc = 2 ] && [ ! -s "$tmp/out" ] &&
	     head -n 1 "$tmp/err" | grep -q -- "$pat" && echo 0 || echo 1) \
		"$desc (rc $rc: $(head -n 1 "$tmp/err"))"
}

echo "1..6"
"$bench" -b host -r 1 -c 64K > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 0 ] && grep -q '^== host: chunk 64 KiB,' "$tmp/out" &&
     ! grep -q granularity "$tmp/out" && echo 0 || echo 1) \
	"host: -c 64K is the chunk"

if [ -r "$fake" ]; then
	mkdir "$tmp/lib" && ln -s "$(cd "$(dirname "$fake")" && pwd)/libfakecuda.so" \
		"$tmp/lib/libcuda.so.1"
	LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$bench" -b cuda -r 1 -c 8M > "$tmp/out" 2>&1; rc=$?
	sed 's/^/# /' "$tmp/out" | head -n 3
	ok $([ $rc = 0 ] && grep -q '^== cuda: chunk 2048 KiB,' "$tmp/out" &&
	     grep -q "device's granularity: -c 8M applies to host and sim only" "$tmp/out" &&
	     echo 0 || echo 1) \
		"cuda: the device's 2 MiB granularity, and -c 8M said not to apply"
else
	ok 0 "cuda: -c said not to apply # SKIP no fake driver at $fake"
fi

usage "-c not a size" "^vmm-bench: -c: vmm.chunk_size = '3X': expected a size" -c 3X
usage "-c not a power of two" "^vmm-bench: -c: vmm.chunk_size = '3M': expected a power of two" -c 3M
usage "-o of an unknown key" "^vmm-bench: -o: unknown key 'pager.budgt'" -o pager.budgt=1
usage "an unknown option" "^vmm-bench: unknown option '-q'" -q
