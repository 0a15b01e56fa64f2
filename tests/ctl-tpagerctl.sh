#!/bin/sh
# SPDX-License-Identifier: MIT
# tpagerctl: listing, reading, checking files, a context with -w, --json.
top_builddir=${top_builddir:-.}
ctl="$top_builddir/tools/tpagerctl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-ctl-tpagerctl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
check() { desc=$1; shift; if "$@" >/dev/null 2>&1; then ok 0 "$desc"; else ok 1 "$desc"; fi; }
have_json() { command -v python3 >/dev/null 2>&1; }
json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)'; }

echo "1..25"

"$ctl" -a > "$tmp/all" 2>"$tmp/err"; rc=$?
nkeys=$(grep -c '^TP_KEY(' "${top_srcdir:-.}/ctl/keys.def")
nstats=$(grep -c '^TP_STAT(' "${top_srcdir:-.}/ctl/stats.def")
lines=$(($(wc -l < "$tmp/all") - 1))
ok $([ $rc = 0 ] && [ "$lines" = $((nkeys + nstats)) ] && echo 0 || echo 1) \
	"-a lists $nkeys keys and $nstats statistics (got $lines)"
check "-a: vmm.chunk_size with value 2M, default 2M, start, help" \
	grep -Eq '^vmm\.chunk_size +2M +2M +start +physical chunk size' "$tmp/all"
check "-a: policy.filter is a run key" grep -Eq '^policy\.filter +overlap +overlap +run ' "$tmp/all"

out=$("$ctl" pager.budget policy.filter 2>&1)
ok $([ "$out" = "pager.budget = 100%
policy.filter = overlap" ] && echo 0 || echo 1) "KEY... prints key = value"
out=$("$ctl" -n vmm.chunk_size 2>&1)
ok $([ "$out" = "2M" ] && echo 0 || echo 1) "-n prints the value alone"

out=$(TPAGER_OPTS=policy.filter=lru "$ctl" -n policy.filter 2>&1)
ok $([ "$out" = "lru" ] && echo 0 || echo 1) "TPAGER_OPTS is a source (got $out)"
printf 'policy.filter = dtr\n' > "$tmp/sys.conf"
out=$(TPAGER_SYSCONF="$tmp/sys.conf" "$ctl" -n policy.filter 2>&1)
ok $([ "$out" = "dtr" ] && echo 0 || echo 1) "the system file is a source (got $out)"
printf 'policy.filter = greedy\n' > "$tmp/user.conf"
out=$(TPAGER_SYSCONF="$tmp/sys.conf" TPAGER_CONF="$tmp/user.conf" "$ctl" -n policy.filter 2>&1)
ok $([ "$out" = "greedy" ] && echo 0 || echo 1) "TPAGER_CONF over the system file (got $out)"

"$ctl" policy.filtr > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && grep -q "unknown key 'policy.filtr' (did you mean 'policy.filter'?)" "$tmp/out" && echo 0 || echo 1) \
	"an unknown key: exit 1 and the nearest key"

printf '# good\npager.budget = 8G\n\n; fine\npolicy.director = evict\n' > "$tmp/good.conf"
out=$("$ctl" -f "$tmp/good.conf" 2>&1); rc=$?
ok $([ $rc = 0 ] && [ "$out" = "$tmp/good.conf: ok" ] && echo 0 || echo 1) "-f on a good file: exit 0"

printf 'pager.budget = 8Q\n# x\nvmm.backend = gpu\npager.low_watermark = 90\n' > "$tmp/bad.conf"
"$ctl" -f "$tmp/bad.conf" > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && echo 0 || echo 1) "-f on a bad file: exit 1"
check "-f names file:line, key, value, expectation" \
	grep -q "bad.conf:1: pager.budget = '8Q': expected a size in bytes" "$tmp/out"
check "-f reports every error" grep -q "bad.conf:3: vmm.backend = 'gpu': expected one of auto, cuda, host, sim" "$tmp/out"
check "-f counts the errors" grep -q "bad.conf: 2 errors" "$tmp/out"
printf 'pager.low_watermark = 90\n' > "$tmp/cross.conf"
"$ctl" -f "$tmp/cross.conf" > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && grep -q "pager.low_watermark (90) is above pager.high_watermark (75)" "$tmp/out" && echo 0 || echo 1) \
	"-f checks keys against each other"

"$ctl" -f "$tmp/missing.conf" > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && grep -q "missing.conf: cannot read: No such file" "$tmp/out" && echo 0 || echo 1) \
	"-f on a missing file: exit 1"

"$ctl" -q > /dev/null 2>"$tmp/err"; rc=$?
ok $([ $rc = 2 ] && [ "$(cat "$tmp/err")" = "tpagerctl: unknown option '-q' (try --help)" ] &&
     echo 0 || echo 1) "a bad option: exit 2, one line named tpagerctl ($(head -n 1 "$tmp/err"))"
"$ctl" --file > /dev/null 2>"$tmp/err"; rc=$?
ok $([ $rc = 2 ] && [ "$(cat "$tmp/err")" = "tpagerctl: option '--file' needs a value (try --help)" ] &&
     echo 0 || echo 1) "an option without its value: exit 2, one line ($(head -n 1 "$tmp/err"))"

if have_json; then
	check "--json -a is JSON" sh -c "'$ctl' --json -a | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"keys\"]) == $((nkeys + nstats))'"
	check "--json -f is JSON with ok false" sh -c "'$ctl' --json -f '$tmp/bad.conf' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"ok\"] is False and d[\"errors\"] == 2 and len(d[\"messages\"]) == 2'"
else
	echo "ok $((n + 1)) # SKIP no python3 to parse JSON"
	echo "ok $((n + 2)) # SKIP no python3 to parse JSON"
	n=$((n + 2))
fi

# -w: a host context with the setting; the budget resolves against the
# host's 4G of device memory.
out=$("$ctl" -w pager.budget=50% -w vmm.chunk_size=64K pager.budget stats.budget_bytes stats.chunk_size vmm.backend 2>&1)
ok $([ "$out" = "pager.budget = 50%
stats.budget_bytes = 2147483648
stats.chunk_size = 65536
vmm.backend = host" ] && echo 0 || echo 1) "-w shows the effect on a context: $(echo $out)"

"$ctl" -w pager.budget=lots stats.budget_bytes > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && grep -q "tp_ctx_create: pager.budget = 'lots': expected a size" "$tmp/out" && echo 0 || echo 1) \
	"-w with a bad value: exit 1 and the reason"
# The settings named are the user's, not the host default they override.
"$ctl" -w vmm.chunk_size=64K -w pager.budget=lots > "$tmp/out" 2>&1; rc=$?
ok $([ $rc = 1 ] && [ "$(wc -l < "$tmp/out")" = 1 ] &&
     grep -q "^tpagerctl: cannot create a context with vmm.chunk_size=64K,pager.budget=lots: " "$tmp/out" &&
     echo 0 || echo 1) "-w failing: one line naming the -w settings alone ($(head -c 200 "$tmp/out"))"
if have_json; then
	check "--json -w is JSON with the statistics" sh -c "'$ctl' --json -w vmm.chunk_size=64K stats.chunk_size | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"keys\"][0][\"value\"] == \"65536\"'"
else
	n=$((n + 1)); echo "ok $n # SKIP no python3 to parse JSON"
fi

# tpagerctl(1)'s EXAMPLES say what each command prints: run them as shown
# (in a directory whose my.conf has the misspelt key on line 3).
man_page="${top_srcdir:-.}/man/tpagerctl.1"
printf '# a user file\n\npolicy.filtr = lru\n' > "$tmp/my.conf"
sed -n '/^\.SH EXAMPLES/,/^\.EE/p' "$man_page" | sed -n '/^\.EX/,/^\.EE/p' |
	grep -v '^\.' | sed 's/\\-/-/g; s/\\(aq/'"'"'/g' > "$tmp/examples"
bad=""
nex=0
while IFS= read -r line; do
	case $line in
	'$ tpagerctl'*)
		nex=$((nex + 1))
		cmd=${line#\$ tpagerctl }
		(cd "$tmp" && eval "\"$ctl\" $cmd") 2>&1 | sed "s|^$ctl:|tpagerctl:|" \
			> "$tmp/ex.$nex"
		: > "$tmp/want.$nex" ;;
	*)
		[ "$nex" -gt 0 ] && printf '%s\n' "$line" >> "$tmp/want.$nex" ;;
	esac
done < "$tmp/examples"
i=1
while [ "$i" -le "$nex" ]; do
	cmp -s "$tmp/ex.$i" "$tmp/want.$i" || bad="$bad $i"
	i=$((i + 1))
done
ok $([ "$nex" -ge 3 ] && [ -z "$bad" ] && echo 0 || echo 1) \
	"tpagerctl(1)'s $nex examples print what the page shows${bad:+ (not:$bad)}"
