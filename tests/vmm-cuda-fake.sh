#!/bin/sh
# SPDX-License-Identifier: MIT
# The vmm and pager tests on the cuda backend, with tests/vmm-fake-libcuda.c
# standing in for the driver: the backend's own code runs where there is no
# GPU, and device memory is no more host memory than on a GPU, so a test
# that touches an acquired address from the host faults here as it would
# there; the pager tests run again with the driver's maps made late. The
# vmm tests are told the library by TPAGER_TEST_CUDA_LIBRARY;
# the pager tests open contexts, which find it as libcuda.so.1. One TAP
# point per test program; their output follows as comments.
b=${top_builddir:-.}
lib=$b/tests/.libs/libfakecuda.so
if [ ! -r "$lib" ]; then
	echo "1..0 # SKIP no fake driver library at $lib"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-cuda-fake.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
ln -s "$(cd "$(dirname "$lib")" && pwd)/libfakecuda.so" "$tmp/libcuda.so.1"
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

# The pager tests that run on the backend of TPAGER_TEST_BACKEND.
progs="vmm-remap vmm-pool vmm-extents vmm-release-behind vmm-copy vmm-inject vmm-elapsed
       vmm-map-ahead vmm-map-gate
       pager-basic pager-cache pager-faults pager-hooks pager-limits
       pager-move pager-slab pager-states pager-stress pager-swap-ahead pager-swap-blocks
       pager-swap-cache
       pager-threads"
# Again with every map made late (the driver's calls slowed), so that
# work a stream was not made to wait for finds its memory unmapped.
late="pager-basic pager-faults pager-move pager-states pager-stress
      pager-swap-cache pager-threads"
echo "1..$(echo $progs $late | wc -w)"
n=0
run() {
	n=$((n + 1))
	# Only where needed: the CUDA runtime linked into the tests looks
	# for libcuda.so.1 too, and would load the stand-in on host and sim
	# passes, where the vmm tests count on it being absent.
	path=$LD_LIBRARY_PATH
	case $1 in pager-*) path="$tmp${path:+:$path}" ;; esac
	out=$(TPAGER_TEST_BACKEND=cuda TPAGER_TEST_CUDA_LIBRARY=$lib \
	      FAKE_CUDA_MAP_DELAY_US=$2 LD_LIBRARY_PATH=$path "$b/tests/$1" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ] && ! echo "$out" | grep -q '^not ok' &&
	   echo "$out" | grep -q -e '^# backend cuda' -e '^ok [0-9]* - cuda: '; then
		echo "ok $n - $1 passes on the cuda backend (fake driver$3)"
	else
		echo "not ok $n - $1 on the cuda backend (fake driver$3), exit $rc"
	fi
}
for t in $progs; do
	run $t 0 ""
done
for t in $late; do
	run $t 200 ", maps 200 us late"
done
