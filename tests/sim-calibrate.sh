#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/sim-calibrate on traces made here, whose GPU times follow a
# known law: a free fit finds it; --launch-max-us holds the launch term
# and keeps each op's total; --gemm-tflops prices the GEMMs at one rate;
# an op the GPU did not time is charged by bytes alone; a trace without
# steps is refused with a message. scripts/sim-issue-calibrate on a trace
# with the host's tracks: an op's issue time is its spans less the waits
# inside them, launches without a span at --default-us, the first step
# left out; a trace without the host's tracks is refused.
top_srcdir=${top_srcdir:-.}
cal="$(cd "$top_srcdir" && pwd)/scripts/sim-calibrate"
issue="$(cd "$top_srcdir" && pwd)/scripts/sim-issue-calibrate"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-sim-calibrate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! command -v python3 > /dev/null; then
	echo "1..0 # SKIP no python3"
	exit 0
fi

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

# Two steps of: synth_image, then conv2d at 8 sizes, then relu (flops
# only), each timed on the "GPU" as 50 us + flops / 2000 + bytes / 400
# (conv2d) or flops / 1500 (relu), ns; the sim trace carries the work.
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
gpu, sim, ts = [], [], 0.0
for step in range(2):
    ops = [('synth_image', 1e6, 0, 20000.0)]
    for i in range(1, 9):
        f, b = 1e8 * i * i, 4e6 * i
        ops.append(('conv2d', f, b, 50000 + f / 2000 + b / 400))
    ops.append(('relu', 3e7, 0, 3e7 / 1500))
    for name, f, b, ns in ops:
        gpu.append({'name': name, 'cat': 'op', 'ph': 'X', 'ts': ts,
                    'dur': ns / 1e3})
        sim.append({'name': name, 'cat': 'op', 'ph': 'X', 'ts': ts,
                    'dur': 1.0, 'args': {'flops': f, 'bytes': b}})
        ts += ns / 1e3 + 1
json.dump({'traceEvents': gpu}, open(d + '/gpu.json', 'w'))
json.dump({'traceEvents': sim}, open(d + '/sim.json', 'w'))
json.dump({'traceEvents': [e for e in gpu if e['name'] != 'synth_image']},
          open(d + '/nosteps.json', 'w'))
PY

# field OP N FILE: the Nth number of OP's line in a generated table
field() {
	sed -n "s/.*{ \"$1\", \(.*\) },/\1/p" "$3" | tr -d ' ' | cut -d, -f"$2"
}
near() { python3 -c "import sys; a, b, e = map(float, sys.argv[1:]); sys.exit(abs(a - b) > e * abs(b))" "$1" "$2" "$3"; }

echo "1..13"
python3 "$cal" "$tmp/gpu.json" "$tmp/sim.json" -o "$tmp/free.inc" > "$tmp/free.out" 2>&1
ok $? "a free fit runs"
ok $(near "$(field conv2d 1 "$tmp/free.inc")" 50000 0.01 &&
     near "$(field conv2d 2 "$tmp/free.inc")" 2000 0.01 &&
     near "$(field conv2d 3 "$tmp/free.inc")" 400 0.01 && echo 0 || echo 1) \
	"it finds conv2d's law: launch 50 us, 2000 FLOP/ns, 400 B/ns ($(field conv2d 1 "$tmp/free.inc"), $(field conv2d 2 "$tmp/free.inc"), $(field conv2d 3 "$tmp/free.inc"))"

python3 "$cal" "$tmp/gpu.json" "$tmp/sim.json" -o "$tmp/cap.inc" --launch-max-us 10 > "$tmp/cap.out" 2>&1
ok $? "a fit with the launch held at 10 us runs"
launch=$(field conv2d 1 "$tmp/cap.inc")
ok $(python3 -c "import sys; sys.exit(not 0 < float(sys.argv[1]) <= 10000 * 1.2)" "$launch" && echo 0 || echo 1) \
	"conv2d's launch is held near 10 us ($launch ns), not 50"
ok $(grep '^step' "$tmp/cap.out" | awk '{ exit !($2 == $3) }' && echo 0 || echo 1) \
	"the ops' runs still add up to the GPU's step ($(grep '^step' "$tmp/cap.out" | tr -s ' '))"
ok $(grep -q 'launch-max-us 10;' "$tmp/cap.inc" && echo 0 || echo 1) \
	"the table says how it was fitted"

python3 "$cal" "$tmp/gpu.json" "$tmp/sim.json" -o "$tmp/gemm.inc" --gemm-tflops 40 > /dev/null 2>&1
ok $([ "$(grep -c '{ "\(linear\|linear_bwd\|gemm\|gemm_bwd\)", 10000, 40000, 0 }' "$tmp/gemm.inc")" = 4 ] && echo 0 || echo 1) \
	"--gemm-tflops 40: the four GEMMs at 40000 FLOP/ns and a 10 us launch"
ok $(grep -q '_OTHER.*{ NULL, 5000, 0, 400 }' "$tmp/free.inc" && echo 0 || echo 1) \
	"an op the GPU did not time: bytes alone, at the median byte rate ($(grep _OTHER "$tmp/free.inc"))"

python3 "$cal" "$tmp/nosteps.json" "$tmp/sim.json" -o "$tmp/x.inc" > "$tmp/nosteps.out" 2>&1
rc=$?
ok $([ $rc != 0 ] && grep -q 'no step' "$tmp/nosteps.out" && [ ! -e "$tmp/x.inc" ] && echo 0 || echo 1) \
	"a trace without steps is refused with a message, nothing written ($(tail -n 1 "$tmp/nosteps.out"))"

# Three steps, the first dearer (left out): each issues conv2d_bwd twice
# in 400 us spans with a 100 us wait in each (a 300 us issue), relu 4
# times, twice in 150 us spans and twice under 100 us (no span), and
# synth_image with no span; one step's conv2d_bwd is a replay.
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
tracks = {1: 'compute', 2: 'host: ops issued (over 100 us)',
          3: 'host: waits on the device'}
ev = [{'ph': 'M', 'name': 'thread_name', 'pid': 1, 'tid': t,
       'args': {'name': n}} for t, n in tracks.items()]
ts = 0.0
def x(tid, name, dur):
    ev.append({'ph': 'X', 'name': name, 'pid': 1, 'tid': tid, 'ts': ts,
               'dur': dur, 'cat': 'op'})
for step in range(3):
    x(1, 'synth_image', 10); ts += 20
    for i in range(2):
        span = 4000 if step == 0 else 400
        x(2, 'conv2d_bwd', span)
        ts += 50; x(3, 'waits for maps made ahead', 100); ts += span - 50
        x(1, 'conv2d_bwd (recompute)' if step == 2 and i else 'conv2d_bwd', 30)
        ts += 40
    for i in range(4):
        if i < 2:
            x(2, 'relu', 150); ts += 160
        x(1, 'relu', 5); ts += 10
json.dump({'traceEvents': ev}, open(d + '/host.json', 'w'))
json.dump({'traceEvents': [e for e in ev if e.get('tid') == 1]},
          open(d + '/nohost.json', 'w'))
PY
python3 "$issue" "$tmp/host.json" -o "$tmp/issue.inc" --source host.json > "$tmp/issue.out" 2>&1
ok $? "sim-issue-calibrate runs ($(tail -n 2 "$tmp/issue.out" | head -n 1))"
ok $(grep -q '{ "conv2d_bwd", 300000 },' "$tmp/issue.inc" && echo 0 || echo 1) \
	"conv2d_bwd: its 400 us spans less their 100 us waits, replays counted, the first step left out ($(grep conv2d_bwd "$tmp/issue.inc"))"
ok $(grep -q '{ "relu", 80000 },' "$tmp/issue.inc" && grep -q '{ "synth_image", 10000 },' "$tmp/issue.inc" && echo 0 || echo 1) \
	"relu: two 150 us spans and two launches at 10 us, 80 us each; synth_image at 10 us"
python3 "$issue" "$tmp/nohost.json" -o "$tmp/y.inc" > "$tmp/nohost.out" 2>&1
rc=$?
ok $([ $rc != 0 ] && grep -q 'no "host: ops issued' "$tmp/nohost.out" && [ ! -e "$tmp/y.inc" ] && echo 0 || echo 1) \
	"a trace without the host's tracks is refused, nothing written ($(tail -n 1 "$tmp/nohost.out"))"

