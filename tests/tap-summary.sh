#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/tap-summary, the closing line of scripts/run-tests and .ci/run:
# "N passed, N failed, N skipped" last, expected failures (XFAIL) on a
# line of their own before it and not counted as passed, and an exit
# status that says whether anything failed.
top_srcdir=${top_srcdir:-.}
summary="$(cd "$top_srcdir" && pwd)/scripts/tap-summary"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-tap-summary.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

# trs DIR NAME RESULT... : a .trs and its .log as tap-driver.sh leaves them.
trs() {
	d=$1 name=$2
	shift 2
	mkdir -p "$d/tests"
	: > "$d/tests/$name.trs"
	: > "$d/tests/$name.log"
	i=0
	for r; do
		i=$((i + 1))
		echo ":test-result: $r" >> "$d/tests/$name.trs"
		echo "$r: tests/$name $i - point $i" >> "$d/tests/$name.log"
	done
}

echo "1..8"
trs "$tmp/a" one PASS PASS XFAIL SKIP
trs "$tmp/a" two PASS XFAIL PASS
(cd "$tmp" && sh "$summary" a) > "$tmp/out"
rc=$?
sed 's/^/# /' "$tmp/out"
ok $([ "$(tail -n 1 "$tmp/out")" = "4 passed, 0 failed, 1 skipped" ] && echo 0 || echo 1) \
	"the last line counts PASS only as passed"
ok $([ "$(wc -l < "$tmp/out")" = 2 ] && echo 0 || echo 1) \
	"expected failures on one line before it"
ok $(head -n 1 "$tmp/out" | grep -q '^2 expected failures' && echo 0 || echo 1) \
	"that line counts the XFAILs"
ok $(head -n 1 "$tmp/out" | grep -q 'a/tests/one 3; a/tests/two 2' && echo 0 || echo 1) \
	"and names the tests and points"
ok $rc "exit 0 when nothing failed"

trs "$tmp/b" one PASS SKIP
(cd "$tmp" && sh "$summary" b) > "$tmp/out"
ok $([ "$(cat "$tmp/out")" = "1 passed, 0 failed, 1 skipped" ] && echo 0 || echo 1) \
	"without expected failures, the one line alone"

trs "$tmp/c" one PASS FAIL XPASS ERROR
(cd "$tmp" && sh "$summary" b c) > "$tmp/out"
rc=$?
ok $([ "$(tail -n 1 "$tmp/out")" = "2 passed, 3 failed, 1 skipped" ] && echo 0 || echo 1) \
	"FAIL, XPASS and ERROR count as failed, over two trees"
ok $([ $rc != 0 ] && echo 0 || echo 1) "exit non-zero when something failed"
