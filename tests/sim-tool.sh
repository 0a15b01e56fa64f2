#!/bin/sh
# SPDX-License-Identifier: MIT
# tpager-sim end to end: a report, JSON, a sweep, and one-line errors with
# a non-zero exit for bad arguments and bad traces.
top_builddir=${top_builddir:-.}
sim_bin="$(cd "$top_builddir/tools" && pwd)/tpager-sim"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-sim-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The wall-time bound (--wall-limit) ends a replay by this machine's
# speed: test 11 checks it; every other run goes without it, so that a
# slow or loaded machine (ASan) gives the same verdicts.
printf '#!/bin/sh\nexec "%s" --wall-limit 0 "$@"\n' "$sim_bin" > "$tmp/sim"
chmod +x "$tmp/sim"
sim="$tmp/sim"
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
# fails DESC ARGS...: exit 2 (bad usage) or 1, exactly one line on stderr
# that names what was wrong (PATTERN), no core dump.
fails() {
	desc=$1; pat=$2; shift 2
	"$sim" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	lines=$(wc -l < "$tmp/err")
	if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$lines" = 1 ] &&
	   grep -q -- "$pat" "$tmp/err"; then
		ok 0 "$desc"
	else
		ok 1 "$desc (rc $rc, stderr: $(head -c 300 "$tmp/err"))"
	fi
}

# The chain of tests/sim-replay.c: DTR peak 13 chunks of 4 KiB; under 10
# chunks DTR's policy evicts b once and recomputes it (1000 ns of 6500).
cat > "$tmp/chain.log" <<'LOG'
{"ANNOTATION":"START","INSTRUCTION":"ANNOTATE"}
{"INSTRUCTION":"CONSTANT","NAME":"a"}
{"INSTRUCTION":"MEMORY","MEMORY":"4096","NAME":"a"}
{"ARGS":["a"],"INSTRUCTION":"CALL","NAME":"f","RESULT":["b"],"TIME":"1000"}
{"INSTRUCTION":"MEMORY","MEMORY":"16384","NAME":"b"}
{"ALIAS":"-1","INSTRUCTION":"ALIAS","NAME":"b"}
{"ARGS":["b"],"INSTRUCTION":"CALL","NAME":"g","RESULT":["c"],"TIME":"2000"}
{"INSTRUCTION":"MEMORY","MEMORY":"16384","NAME":"c"}
{"ALIAS":"-1","INSTRUCTION":"ALIAS","NAME":"c"}
{"ARGS":["c"],"INSTRUCTION":"CALL","NAME":"h","RESULT":["d"],"TIME":"3000"}
{"INSTRUCTION":"MEMORY","MEMORY":"16384","NAME":"d"}
{"ALIAS":"-1","INSTRUCTION":"ALIAS","NAME":"d"}
{"INSTRUCTION":"RELEASE","NAME":"c"}
{"ARGS":["b","d"],"INSTRUCTION":"CALL","NAME":"k","RESULT":["e"],"TIME":"500"}
{"INSTRUCTION":"MEMORY","MEMORY":"4096","NAME":"e"}
{"ALIAS":"-1","INSTRUCTION":"ALIAS","NAME":"e"}
{"INSTRUCTION":"RELEASE","NAME":"b"}
{"INSTRUCTION":"RELEASE","NAME":"d"}
{"INSTRUCTION":"RELEASE","NAME":"e"}
{"INSTRUCTION":"RELEASE","NAME":"a"}
LOG
gzip -c "$tmp/chain.log" > "$tmp/chain.log.gz"
wm="--set pager.high_watermark=100 --set pager.low_watermark=100"

echo "1..38"

"$sim" "$tmp/chain.log" --chunk-size 4K --budget 40960 --policy dtr/evict $wm \
	> "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^result  *fits$' "$tmp/out" &&
     grep -q '^overhead (DTR)  *1\.1538$' "$tmp/out" &&
     grep -q '^evictions  *1 (0 partial)$' "$tmp/out" &&
     grep -q '^recomputes  *1 (0\.001 ms)$' "$tmp/out" && echo 0 || echo 1) \
	"a report: fits, overhead 1.1538, one eviction, one recompute"
ok $(grep -q '^budget  *40960 bytes (0\.769 of the trace peak), chunk 4096$' "$tmp/out" &&
     grep -q '^peak (trace)  *53248 bytes$' "$tmp/out" && echo 0 || echo 1) \
	"the report states the budget, its ratio and the chunk size"

"$sim" "$tmp/chain.log.gz" --chunk-size 4K --budget 0.77 --policy dtr/evict $wm --json \
	> "$tmp/json" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '"result":"fits"' "$tmp/json" &&
     grep -q '"overhead":1.153846' "$tmp/json" &&
     grep -q '"budget":40960' "$tmp/json" && echo 0 || echo 1) \
	"gzip input, a ratio, --json"
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json,sys; json.load(sys.stdin)' < "$tmp/json"
	ok $? "--json prints valid JSON"
else
	n=$((n + 1)); echo "ok $n # SKIP no python3"
fi

"$sim" "$tmp/chain.log" --chunk-size 4K --budget 36864 --policy dtr/evict $wm \
	> "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 1 ] && grep -q '^result  *OOM' "$tmp/out" && echo 0 || echo 1) \
	"9 chunks do not fit: exit 1, result OOM"
ok $(grep -q '^overhead\|^evictions\|^recomputes' "$tmp/out" && echo 1 || echo 0) \
	"a replay that did not fit reports no overhead or counts it did not measure"

# A DTR log: the policy is told remapping costs nothing, as in DTR's
# simulator, unless a GPU's profile charges the driver's costs.
"$sim" "$tmp/chain.log" --chunk-size 4K --policy dtr/evict > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] &&
     grep -q '^remap cost  *0.000 us a driver granule, told to the policy$' "$tmp/out" &&
     echo 0 || echo 1) "a DTR log: remapping costs the policy nothing"
"$sim" "$tmp/chain.log" --chunk-size 4K --policy dtr/evict \
	--set vmm.sim.profile=h200 > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] &&
     grep -q "^remap cost  *the backend's, told to the policy$" "$tmp/out" &&
     echo 0 || echo 1) "a DTR log on the h200 profile: the policy is told the profile's driver costs"

# On a GPU's profile a DTR log replays as PyTorch ran it, the host issuing
# ahead of the device: the default's clock is --async's, faster than the
# host waiting for each op (--sync, DTR's simulator's clock).
replay_times() {
	"$sim" "$tmp/chain.log" --chunk-size 4K --budget 0.77 --policy dtr/evict \
		--set vmm.sim.profile=h200 "$@" --json 2>/dev/null |
		sed -n 's/.*"time_ns":\([0-9]*\).*"unlimited_time_ns":\([0-9]*\).*/\1 \2/p'
}
t_def=$(replay_times); t_async=$(replay_times --async); t_sync=$(replay_times --sync)
ok $([ -n "$t_def" ] && [ "$t_def" = "$t_async" ] &&
     [ "${t_def% *}" -lt "${t_sync% *}" ] &&
     [ "${t_def#* }" -lt "${t_sync#* }" ] && echo 0 || echo 1) \
	"a DTR log on the h200 profile: the host issues ahead ($t_def ns budgeted, unconstrained; --sync $t_sync)"

# A chain of 60 ops and its backward pass in 5 chunks: greedy/evict
# recomputes the chain from its start for each gradient, remapping each
# op's output. A tpager trace stops as thrashing past 10 times its
# unconstrained time (its compute and the few maps the range cache leaves
# it), as the benches do; with --thrash 0 it runs out, at 892 times the
# unconstrained time.
{
	echo "tpager-trace 1"
	echo "tensor 1 4096 param"
	for i in $(seq 2 61); do
		echo "op f 1000 $((i - 1)) => $i:4096:activation,computable"
	done
	echo "op loss 1000 61 => 100:4096:activation,computable"
	g=100
	for i in $(seq 61 -1 2); do
		echo "op b 1000 $i $g => $((i + 100)):4096:grad,computable"
		echo "free $g"; echo "free $i"
		g=$((i + 100))
	done
	echo "free $g"
} > "$tmp/chain.trace"
"$sim" "$tmp/chain.trace" --chunk-size 4K --budget 20480 --policy greedy/evict \
	> "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 1 ] &&
     grep -q '^result  *thrash: the passes took more than 10.00x their unconstrained time$' "$tmp/out" &&
     echo 0 || echo 1) "a tpager trace: thrashing past 10 times the unconstrained time stops by default"
"$sim" "$tmp/chain.trace" --chunk-size 4K --budget 20480 --policy greedy/evict \
	--thrash 0 > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^result  *fits$' "$tmp/out" &&
     grep -q '^extra time  *89128.37 %$' "$tmp/out" &&
     echo 0 || echo 1) "the same with --thrash 0 runs out (without the wall-time bound): 89128.37% extra time"
# ... which takes far more than 10 times the unconstrained replay's wall
# time: with only --thrash 0 the wall-time bound ends it, saying so.
"$sim_bin" "$tmp/chain.trace" --chunk-size 4K --budget 20480 \
	--policy greedy/evict --thrash 0 > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 1 ] &&
     grep -q '^result  *thrash: the passes took more than 10.00x their unconstrained wall time' "$tmp/out" &&
     echo 0 || echo 1) "with --thrash 0 alone, the wall-time bound ends it as thrashing"

# No --budget: one replay without a limit, said so.
"$sim" "$tmp/chain.log" --chunk-size 4K --policy dtr/evict > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] &&
     grep -q '^budget  *none: no limit (a pool of 1155072 bytes, 21.692 times the trace peak), chunk 4096$' "$tmp/out" &&
     grep -q '^policy  *dtr/evict$' "$tmp/out" && echo 0 || echo 1) \
	"without --budget: no limit, the pool (2 x 53248 + 256 chunks) and the policy stated"

"$sim" "$tmp/chain.log" --chunk-size 4K --policy dtr/evict $wm --sweep \
	> "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^minimum budget  *77% of the trace peak (dtr/evict)$' "$tmp/out" &&
     grep -q '^    75%  OOM  *-  *-  *-  *-  *0\.0000$' "$tmp/out" && grep -q '^    80%  fits' "$tmp/out" &&
     grep -q '^    76%  OOM' "$tmp/out" && grep -q '^  76.9%  OOM' "$tmp/out" &&
     echo 0 || echo 1) \
	"--sweep: 80% fits, 75% not; in 1% steps 77% (10.01 of 13 chunks) fits, 76% (9.88) not, nor 76.9% (9.997) by halves"

# The policy the replays ran, named in the last line whoever chose it.
"$sim" "$tmp/chain.log" --chunk-size 4K --set policy.filter=lru \
	--set policy.director=evict $wm --sweep --json > "$tmp/out" 2>"$tmp/err"
"$sim" "$tmp/chain.log" --chunk-size 4K --set policy.filter=lru \
	--set policy.director=evict $wm --sweep > "$tmp/out2" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && tail -n 1 "$tmp/out2" | grep -q '(lru/evict)$' &&
     grep '"result":"OOM"' "$tmp/out" | grep -q '"overhead":null,"evictions":null' &&
     echo 0 || echo 1) \
	"--sweep names the policy set by --set, and gives no figures for OOM rows ($(tail -n 1 "$tmp/out2"))"

# The trace of tests/sim-frag.c (see there): 24 chunks of 4 KiB live at
# its peak; chunks fit in 17, the contiguous pool needs 30, above the peak,
# which the sweep finds by going up from 100%.
{
	echo "tpager-trace 1"
	for i in 1 3 5 7 9 11 13 15; do
		echo "tensor $i 4096 param"
		echo "op fill 1000 $i => $((i + 1)):8192:activation,computable"
	done
	for i in 2 4 6 8 10 12 14 16; do echo "free $i"; done
	echo "op big 4000 1 => 17:32768:activation,computable"
	echo "op use 1000 17 3 => 18:4096:activation,computable"
	echo "free 17"; echo "free 18"
} > "$tmp/frag.trace"
"$sim" "$tmp/frag.trace" --chunk-size 4K --policy dtr/evict --sweep \
	> "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^minimum budget  *70.9% of the trace peak (dtr/evict)$' "$tmp/out" &&
     grep -q '^    71%  fits' "$tmp/out" && grep -q '^  70.8%  OOM' "$tmp/out" &&
     [ "$(grep -c '^    70%  OOM' "$tmp/out")" = 1 ] && echo 0 || echo 1) \
	"--sweep on chunks: 71% fits, then by halves 70.9% (17.02 of 24 chunks; 17 needed) fits, 70.8% (16.99) not; 70% run once"
"$sim" "$tmp/frag.trace" --chunk-size 4K --policy dtr/evict --sweep \
	--set vmm.mode=contiguous > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^minimum budget  *125% of the trace peak (dtr/evict)$' "$tmp/out" &&
     grep '^   100%  OOM' "$tmp/out" | grep -qv ' 0\.0000$' &&
     grep -q '^   120%  OOM' "$tmp/out" && grep -q '^   124%  OOM' "$tmp/out" &&
     echo 0 || echo 1) \
	"--sweep contiguous: OOM at 100% with fragmentation, up to 125% (30 chunks)"

# Warm-up passes run the region first and are not counted.
"$sim" "$tmp/chain.log" --chunk-size 4K --budget 40960 --policy dtr/evict $wm \
	--warmup 2 --json > "$tmp/json" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '"ops":4,' "$tmp/json" &&
     grep -q '"overhead":1.153846' "$tmp/json" &&
     grep -q '"time_ns":7500,' "$tmp/json" && echo 0 || echo 1) \
	"--warmup 2: the figures are those of the one measured pass"

fails "bad warm-up" "--warmup: '1001'" "$tmp/chain.log" --warmup 1001
fails "no trace" "no trace given"
fails "two traces" "more than one trace" "$tmp/chain.log" "$tmp/chain.log"
fails "unknown option" "unknown option '--frobnicate'" "$tmp/chain.log" --frobnicate
fails "bad budget" "--budget: 'lots'" "$tmp/chain.log" --budget lots
fails "bad ratio" "--budget: '1.5' is not a ratio" "$tmp/chain.log" --budget 1.5
fails "bad format" "--format: 'xml'" "$tmp/chain.log" --format xml
fails "bad policy key" "policy.filter" "$tmp/chain.log" --policy nosuch/evict
fails "--bandwidth with a GPU's profile, which sets the link" \
	"--bandwidth: a GPU's profile" "$tmp/chain.log" --bandwidth 12 \
	--set vmm.sim.profile=h200
fails "missing file" "$tmp/none" "$tmp/none"
printf '{"INSTRUCTION":"CONSTANT","NAME":"a"}\n{"INSTRUCTION":"RELEASE"}\n' > "$tmp/bad.log"
fails "bad trace: file and line" "bad.log:2" "$tmp/bad.log"
printf 'not a trace\n' > "$tmp/junk"
fails "unknown format" "unknown trace format" "$tmp/junk"

# Compressed input through zlib: no gzip(1) needed, a pipe read once, and
# a damaged stream is an error naming the file.
"$sim" /dev/stdin --chunk-size 4K --budget 0.77 --policy dtr/evict $wm \
	< "$tmp/chain.log.gz" > "$tmp/out" 2>"$tmp/err"; rc=$?
ok $([ $rc = 0 ] && grep -q '^result  *fits$' "$tmp/out" &&
     grep -q '^overhead (DTR)  *1\.1538$' "$tmp/out" && echo 0 || echo 1) \
	"gzip input on a pipe (/dev/stdin)"
(PATH=/nonexistent; "$sim" "$tmp/chain.log.gz" --chunk-size 4K --budget 0.77 \
	--policy dtr/evict $wm > "$tmp/out" 2>"$tmp/err"); rc=$?
ok $([ $rc = 0 ] && grep -q '^result  *fits$' "$tmp/out" && echo 0 || echo 1) \
	"gzip input with no gzip(1) on the path"
head -c 60 "$tmp/chain.log.gz" > "$tmp/cut.log.gz"
fails "truncated gzip" "cut.log.gz: not a valid gzip file: truncated" "$tmp/cut.log.gz"
cp "$tmp/chain.log.gz" "$tmp/crc.log.gz"
size=$(wc -c < "$tmp/chain.log.gz")
printf '\377\377\377\377' | dd of="$tmp/crc.log.gz" bs=1 seek=$((size - 8)) conv=notrunc 2>/dev/null
fails "corrupt gzip" "crc.log.gz: not a valid gzip file: incorrect data check" "$tmp/crc.log.gz"

# The host swap a replay needed: none for an evict-only policy; held
# beyond the peak by the pieces prepared ahead, unless that is off.
num() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" "$2"; }
"$sim" "$tmp/chain.log" --chunk-size 4K --budget 40960 --policy dtr/evict $wm \
	--json > "$tmp/json" 2>"$tmp/err"
ok $([ "$(num host_peak "$tmp/json")" = 0 ] &&
     [ "$(num host_held "$tmp/json")" = 0 ]; echo $?) \
	"--json: host_peak and host_held 0 where nothing was offloaded"
top_srcdir=${top_srcdir:-..}
r50="$top_srcdir/traces/resnet50-b256.trace"
"$sim" "$r50" --budget 15% --set vmm.sim.profile=h200 --json > "$tmp/on" 2>&1
"$sim" "$r50" --budget 15% --set vmm.sim.profile=h200 \
	--set pager.swap_ahead=0 --json > "$tmp/off" 2>&1
hp=$(num host_peak "$tmp/on"); hh=$(num host_held "$tmp/on")
ok $([ "${hp:-0}" -gt 0 ] && [ "${hh:-0}" -gt "$hp" ] &&
     [ "$(num host_held "$tmp/off")" = "$(num host_peak "$tmp/off")" ]
     echo $?) \
	"ResNet-50's trace at 15%: host swap peak $hp, held $hh with pieces prepared ahead, the peak itself without"

# A tpager-trace 3 file says where it ends: one cut after a line is an
# error naming that line, from a file or a pipe, not a shorter replay.
head -n 2000 "$top_srcdir/traces/resnet50-b256.trace" > "$tmp/cut.trace"
fails "a shipped trace cut after line 2000" \
	"cut.trace:2000: truncated: the trace stops after this line, without its end record" \
	"$tmp/cut.trace"
fails "the same on a pipe" "^tpager-sim: /dev/stdin:2000: truncated" /dev/stdin < "$tmp/cut.trace"
