#!/bin/sh
# SPDX-License-Identifier: MIT
# libtpager.so holds the pager, the lineage, the policies, the backends
# and the ctl namespace, and nothing else: none of the trace tooling
# (libtpager_trace), not even as local symbols, and nothing that starts
# a process, which would surprise the program that loads it.
top_builddir=${top_builddir:-.}
lib="$top_builddir/.libs/libtpager.so"

echo "1..4"
if [ ! -f "$lib" ]; then
	for i in 1 2 3 4; do echo "ok $i # SKIP no $lib (static build)"; done
	exit 0
fi

# Every symbol, local ones too: the trace code's functions and files.
funcs='tp_(trace|replay|json|symtab|sweep|gunzip|gzip)_.*|tp_sweep'
files='(dtr_read|json|replay|replay_load|sweep|symtab|gunzip|trace)\.c'
files="$files|trace_(error|gen|load|peak|read|write)\\.c"
trace=$(nm -a "$lib" | awk '{ print $NF }' | grep -E "^($funcs|$files)\$" |
	sort -u | tr '\n' ' ')
[ -z "$trace" ] && echo "ok 1 - no symbol of the trace tooling in libtpager.so" ||
	echo "not ok 1 - trace tooling in libtpager.so: $trace"

spawn=$(nm -D --undefined-only "$lib" | awk '{ print $2 }' | sed 's/@.*//' |
	grep -E '^(fork|vfork|_Fork|clone|clone3|system|popen|posix_spawnp?|exec(l|lp|le|v|vp|vpe|ve)|fexecve)$' |
	tr '\n' ' ')
[ -z "$spawn" ] && echo "ok 2 - libtpager.so calls nothing that starts a process" ||
	echo "not ok 2 - libtpager.so can start processes: $spawn"

gz=$(strings -a "$lib" | grep -c gzip)
[ "$gz" = 0 ] && echo "ok 3 - no mention of gzip in libtpager.so" ||
	echo "not ok 3 - libtpager.so mentions gzip $gz times"

needed=$(objdump -p "$lib" | awk '$1 == "NEEDED" { print $2 }' | grep '^libz\.' | tr '\n' ' ')
[ -z "$needed" ] && echo "ok 4 - libtpager.so does not need zlib" ||
	echo "not ok 4 - libtpager.so needs $needed"
