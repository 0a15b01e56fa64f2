#!/bin/sh
# SPDX-License-Identifier: MIT
# Every symbol libtpager.so exports starts with tp_, carries the version
# TPAGER_0.1 and has a man page; so has every function tpager.h declares.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
lib="$top_builddir/.libs/libtpager.so"
man="$top_srcdir/man"

echo "1..6"
if [ ! -f "$lib" ]; then
	for i in 1 2 3 4 5; do echo "ok $i # SKIP no $lib (static build)"; done
else
	syms=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u)
	bad=$(echo "$syms" | grep -v '^tp_' | tr '\n' ' ')
	[ -n "$syms" ] && [ -z "$bad" ] && echo "ok 1 - $(echo "$syms" | wc -l) exported symbols, all tp_" ||
		echo "not ok 1 - exported symbols not starting with tp_: $bad"
	nopage=
	for s in $syms; do
		[ -f "$man/$s.3" ] || nopage="$nopage $s"
	done
	[ -z "$nopage" ] && echo "ok 2 - every exported symbol has a man page" ||
		echo "not ok 2 - exported symbols without a man page:$nopage"
	unversioned=$(objdump -T "$lib" | awk '!/\*UND\*/ && $NF ~ /^tp_/ && $(NF-1) != "TPAGER_0.1" { print $NF }' | tr '\n' ' ')
	versioned=$(objdump -T "$lib" | awk '!/\*UND\*/ && $NF ~ /^tp_/ && $(NF-1) == "TPAGER_0.1"' | wc -l)
	[ -z "$unversioned" ] && [ "$versioned" -gt 0 ] &&
		echo "ok 3 - $versioned symbols carry the version TPAGER_0.1" ||
		echo "not ok 3 - symbols without TPAGER_0.1: $unversioned"
	# Nothing of the library's internals leaks, not even other prefixes.
	leaked=$(nm -D --defined-only "$lib" | awk '$2 ~ /[A-Z]/ && $2 != "A" && $3 !~ /^tp_/ { print $3 }' | tr '\n' ' ')
	[ -z "$leaked" ] && echo "ok 4 - no internal symbol exported" ||
		echo "not ok 4 - internal symbols exported: $leaked"
	# A tp_ function the library calls but does not define would break
	# every program linked with it.
	undef=$(nm -D --undefined-only "$lib" | awk '$2 ~ /^tp_/ { print $2 }' | tr '\n' ' ')
	[ -z "$undef" ] && echo "ok 5 - the library defines every tp_ function it uses" ||
		echo "not ok 5 - the library uses tp_ functions it does not define: $undef"
fi

# Functions declared TP_API in the public header, implemented yet or not.
decl=$(sed -n 's/^TP_API[^(]*[ *]\(tp_[a-z0-9_]*\)(.*/\1/p' "$top_srcdir/include/tpager.h" | sort -u)
nopage=
for s in $decl; do
	[ -f "$man/$s.3" ] || nopage="$nopage $s"
done
[ -n "$decl" ] && [ -z "$nopage" ] &&
	echo "ok 6 - all $(echo "$decl" | wc -l) functions of tpager.h have a man page" ||
	echo "not ok 6 - functions of tpager.h without a man page:$nopage"
