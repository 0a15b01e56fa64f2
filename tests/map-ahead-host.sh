#!/bin/sh
# SPDX-License-Identifier: MIT
# Maps made ahead with real bytes and kernels: the host backend with
# vmm.map_ahead=on, where the library's driver thread makes every map and
# re-carve and the issuing thread waits for them before it issues work
# (tpager.conf(5)). The pager and lineage tests that check bytes, and
# training under half its peak, bit-identical to the unconstrained run,
# must hold as they do with the maps made on the issuing thread. One TAP
# point per program; their output follows as comments.
b=${top_builddir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-map-ahead.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF

progs="pager-basic pager-states pager-stress pager-threads pager-swap-cache
       pager-rescue lineage-chain lineage-dag lineage-swap-full"
models="mlp resnet-mini"
echo "1..$(echo $progs $models | wc -w)"
n=0
for t in $progs; do
	n=$((n + 1))
	out=$(TPAGER_TEST_BACKEND=host TPAGER_OPTS=vmm.map_ahead=on \
	      timeout 300 "$b/tests/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ] && ! echo "$out" | grep -q '^not ok' &&
	   echo "$out" | grep -q '^ok'; then
		echo "ok $n - $t passes with the maps made ahead (host)"
	else
		echo "not ok $n - $t with the maps made ahead (host), exit $rc"
	fi
done
# Training: the weights bit-identical, the driver thread making the calls.
for m in $models; do
	n=$((n + 1))
	unset TPAGER_OPTS
	json=$(timeout 300 "$b/tools/tpager-train" --backend host --model "$m" \
	       --steps 10 --budget 50% --set vmm.map_ahead=on --json 2>&1 |
	       tail -1)
	echo "# $json"
	if echo "$json" | grep -q '"weights_identical":true' &&
	   echo "$json" | grep -q '"budget":{.*"evictions":[1-9]' &&
	   ! echo "$json" | grep -q '"budget":{.*"driver_bg_calls_per_step":0\.0,'; then
		echo "ok $n - $m under 50%, maps made ahead: weights bit-identical, the driver thread mapping"
	else
		echo "not ok $n - $m under 50% with the maps made ahead"
	fi
done
