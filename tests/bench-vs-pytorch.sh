#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/vs-pytorch cannot run here for real (it needs PyTorch and a GPU):
# check that it compiles (py_compile), that --help works without PyTorch,
# and that where PyTorch or a device is missing it says so and exits 2 at
# once. Its driver runs with --dry-run (stand-in PyTorch tries in worker
# processes, tpager's rows from tools/tpager-train on the sim's H200
# profile): every try and row is a JSON line printed as it completes, every
# row states its math mode, PyTorch's rows come with TF32 as it defaults
# and off, tpager's rows give samples per second at its own largest batch
# and at PyTorch-checkpoint's, for ResNet-50 and BERT-base; a known batch
# is confirmed in two tries; --time-limit cuts the run and says what it cut.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
script="$top_srcdir/bench/vs-pytorch"
train="$top_builddir/tools/tpager-train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-vs-pytorch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

echo "1..13"
if ! command -v python3 >/dev/null 2>&1; then
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "ok $i # SKIP no python3"; done
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
for o in --cap --tpager --known --time-limit --maths --dry-run; do
	grep -q -- "$o" "$tmp/out" || rc=1
done
ok $rc "--help lists --cap, --tpager, --known, --time-limit, --maths and --dry-run"

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
	>/dev/null 2>&1; then
	echo "ok 4 # SKIP PyTorch sees a GPU here: the benchmark would run"
	n=4
else
	python3 "$script" --cap 1G >"$tmp/out" 2>"$tmp/err"
	rc=$?
	sed 's/^/# /' "$tmp/err"
	[ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q 'run it on the GPU machine' "$tmp/err"
	ok $? "without PyTorch or a GPU: a clear message, exit 2 (got $rc)"
fi

# check PROGRAM FILE: run the Python PROGRAM on the JSON lines of FILE
# (as `lines`, rows as `rows`, tries as `tries`); it exits 0 when they
# are right, or prints what is wrong.
check() {
	python3 - "$2" >"$tmp/check.out" 2>&1 <<PY
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rows = [l["row"] for l in lines if "row" in l]
tries = [l["try"] for l in lines if "try" in l]
def row(model, system, math=None):
    rs = [r for r in rows if r["model"] == model and r["system"] == system
          and (math is None or r["math"] == math)]
    assert len(rs) == 1, (model, system, math, rs)
    return rs[0]
$1
PY
	status=$?
	sed 's/^/# /' "$tmp/check.out"
	return $status
}

h200="--tpager $train --tpager-backend sim --tpager-set vmm.sim.profile=h200"
python3 "$script" --dry-run --cap 4G --json --warmup 0 --steps 1 \
	--tpager-steps 2 $h200 >"$tmp/all.json" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
check 'assert lines and "summary" in lines[-1], "no summary line"
assert lines[-1]["summary"]["complete"] and len(rows) == 22, len(rows)
first_row = next(i for i, l in enumerate(lines) if "row" in l)
last_try = max(i for i, l in enumerate(lines) if "try" in l)
assert first_row < last_try, "rows came only at the end"' "$tmp/all.json"
ok $(( rc + $? )) "--dry-run --json: exit $rc, a JSON line per try and per row as each completes, 22 rows, a summary"

check 'for m in ("resnet50", "bert-base"):
    for mode in ("plain", "checkpoint", "expandable"):
        for math in ("default", "fp32"):
            r = row(m, "pytorch " + mode, math)
            assert r["dry_run"] and r["max_batch"] > 0 and r["step_s"] > 0
assert all(r["math"] in ("default", "fp32") and r["math_mode"] for r in rows)
assert "TF32" in row("resnet50", "pytorch plain", "default")["math_mode"]
assert row("resnet50", "pytorch plain", "fp32")["math_mode"] == "FP32: TF32 off"
assert row("resnet50", "pytorch plain", "default")["max_batch"] == 44
assert row("resnet50", "pytorch checkpoint", "fp32")["max_batch"] == 102' \
	"$tmp/all.json"
ok $? "PyTorch rows: three modes with TF32 as it defaults and off, each row stating its math mode"

check 'for m in ("resnet50", "bert-base"):
    t = row(m, "tpager (paging)")
    assert t["math"] == "fp32" and "no TF32" in t["math_mode"], t
    assert t["complete"] and t["max_batch"] > row(m, "tpager (no paging)")["max_batch"]
    assert abs(t["images_per_s"] - t["max_batch"] / t["step_s"]) < 0.01 * t["images_per_s"]
    c = row(m, "tpager at checkpoint'"'"'s batch")
    assert c["max_batch"] == row(m, "pytorch checkpoint", "fp32")["max_batch"]
    assert c["step_s"] > 0 and c["images_per_s"] > 0, c
    # the short run first: a time limit takes the search, not it
    assert rows.index(c) < rows.index(t), (rows.index(c), rows.index(t))
assert any(t["system"] == "tpager (paging)" and t["model"] == "bert-base"
           for t in tries)' "$tmp/all.json"
ok $? "tpager rows, ResNet-50 and BERT-base: samples/s at PyTorch-checkpoint's FP32 batch, then at its largest batch, its tries passed on"

check 'for m in ("resnet50", "bert-base"):
    p = row(m, "tpager +plan (paging)")
    assert p["complete"] and p["max_batch"] > 0 and p["step_s"] > 0, p
    assert abs(p["images_per_s"] - p["max_batch"] / p["step_s"]) < 0.01 * p["images_per_s"]
    c = row(m, "tpager +plan at checkpoint'"'"'s batch")
    assert c["max_batch"] == row(m, "pytorch checkpoint", "fp32")["max_batch"]
    assert c["step_s"] > 0, c
    assert not [r for r in rows if r["model"] == m and r["system"] == "tpager +plan (no paging)"]
tp = [t for t in tries if t["system"] == "tpager +plan (paging)"]
assert tp and all(t["batch"] > 0 for t in tp), tp' "$tmp/all.json"
ok $? "tpager rows with TSPLIT's planner beside the dynamic ones, its tries passed on"

python3 "$script" --dry-run --cap 4G --json --models resnet50 --modes plain \
	--maths default --known plain:resnet50=44 >"$tmp/known.json" 2>"$tmp/err"
rc=$?
check 'r = row("resnet50", "pytorch plain", "default")
assert r["max_batch"] == 44 and r["tries"] == 2, r
assert [t["batch"] for t in tries] == [44, 45], tries' "$tmp/known.json"
ok $(( rc + $? )) "--known plain:resnet50=44: confirmed in two tries (44 fits, 45 does not)"

python3 "$script" --dry-run --cap 4G --json --models resnet50 --modes plain \
	--maths default --known plain:resnet50=60 >"$tmp/known2.json" 2>"$tmp/err"
rc=$?
check 'r = row("resnet50", "pytorch plain", "default")
assert r["max_batch"] == 44, r' "$tmp/known2.json"
ok $(( rc + $? )) "a known batch that no longer fits: the search goes down to 44"

start=$(date +%s)
python3 "$script" --dry-run --cap 4G --json --dry-run-delay 0.3 \
	--time-limit 2 $h200 >"$tmp/cut.json" 2>"$tmp/err"
rc=$?
took=$(( $(date +%s) - start ))
check 'assert not lines[-1]["summary"]["complete"]
assert len(rows) == 22, len(rows)
assert any(r.get("error") == "not begun: time limit" for r in rows)
assert all(r["max_batch"] is None or r["max_batch"] > 0 for r in rows)
assert not rows[0]["complete"] or not rows[1]["complete"]' "$tmp/cut.json"
ok $(( rc + $? )) "--time-limit 2: done in $took s, every row printed, the cut ones marked"
[ "$took" -lt 15 ]
ok $? "--time-limit 2 took $took s"

python3 "$script" --dry-run --known plain:resnet=4 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && [ ! -s "$tmp/out" ] && grep -q 'known plain:resnet=4' "$tmp/err"
ok $? "a malformed --known is refused (exit $rc)"
