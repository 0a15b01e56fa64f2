#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/vs-pytorch cannot run here (it needs PyTorch and a GPU): check that
# it compiles (py_compile), that --help works without PyTorch, and that
# where PyTorch or a device is missing it says so and exits 2 at once.
top_srcdir=${top_srcdir:-.}
script="$top_srcdir/bench/vs-pytorch"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-vs-pytorch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

echo "1..4"
if ! command -v python3 >/dev/null 2>&1; then
	for i in 1 2 3 4; do echo "ok $i # SKIP no python3"; done
	exit 0
fi
[ -x "$script" ]
ok $? "bench/vs-pytorch is executable"

python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
	"$script" "$tmp/vs-pytorch.pyc" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && sed 's/^/# /' "$tmp/err"
ok $rc "py_compile accepts it"

python3 "$script" --help >"$tmp/out" 2>&1
rc=$?
grep -q -- '--cap' "$tmp/out" && grep -q -- '--tpager' "$tmp/out"
ok $((rc + $?)) "--help lists --cap and --tpager (exit $rc)"

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
	>/dev/null 2>&1; then
	echo "ok 4 # SKIP PyTorch sees a GPU here: the benchmark would run"
	exit 0
fi
python3 "$script" --cap 1G >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q 'run it on the GPU machine' "$tmp/err"
ok $? "without PyTorch or a GPU: a clear message, exit 2 (got $rc)"
