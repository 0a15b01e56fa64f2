#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/conv-lean on the sim's H200 profile: a bound on a convolution's
# scratch slows the unconstrained step (only the convolutions, at most
# 1.37 times: more than 1x, less than 1.37x the step) and, in 4 GiB at
# batch 128, leaves room that makes the budgeted step faster than with
# the fastest algorithms' scratch. One JSON line per bound.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
script="$top_srcdir/bench/conv-lean"
train="$top_builddir/tools/tpager-train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-conv-lean.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

. "$top_srcdir/tests/train-util.sh"

echo "1..3"
if ! command -v python3 >/dev/null 2>&1; then
	for i in 1 2 3; do echo "ok $i # SKIP no python3"; done
	exit 0
fi
timeout 120 python3 "$script" --tpager "$train" --steps 2 --bounds 0,64M \
	--json > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && [ ! -s "$tmp/err" ] && [ "$(wc -l < "$tmp/out")" = 2 ]
     echo $?) "two bounds, two JSON lines"
got() { sed -n "$1p" "$tmp/out" | sed -n "s/.*\"$2\": \([^,}]*\).*/\1/p"; }
slow=$(got 2 slowdown)
ok $(awk -v s="$slow" 'BEGIN { exit !(s > 1.05 && s < 1.37) }'; echo $?) \
	"64M: the unconstrained step is ${slow}x no bound's (the convolutions at most 1.37x)"
b0=$(got 1 budget_step_ms)
b1=$(got 2 budget_step_ms)
ok $(awk -v a="$b0" -v b="$b1" 'BEGIN { exit !(b > 0 && b < a) }'; echo $?) \
	"4 GiB: the budgeted step with 64M ($b1 ms) is faster than without a bound ($b0 ms)"
