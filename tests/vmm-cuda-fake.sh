#!/bin/sh
# SPDX-License-Identifier: MIT
# The vmm and pager tests on the cuda backend, with tests/vmm-fake-libcuda.c
# standing in for the driver: the backend's own code runs where there is no
# GPU, and device memory is no more host memory than on a GPU, so a test
# that touches an acquired address from the host faults here as it would
# there. The vmm tests are told the library by TPAGER_TEST_CUDA_LIBRARY;
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
       pager-basic pager-cache pager-faults pager-hooks pager-limits
       pager-slab pager-states pager-stress pager-swap-blocks pager-swap-cache
       pager-threads"
echo "1..$(echo $progs | wc -w)"
n=0
for t in $progs; do
	n=$((n + 1))
	# Only where needed: the CUDA runtime linked into the tests looks
	# for libcuda.so.1 too, and would load the stand-in on host and sim
	# passes, where the vmm tests count on it being absent.
	path=$LD_LIBRARY_PATH
	case $t in pager-*) path="$tmp${path:+:$path}" ;; esac
	out=$(TPAGER_TEST_BACKEND=cuda TPAGER_TEST_CUDA_LIBRARY=$lib \
	      LD_LIBRARY_PATH=$path "$b/tests/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ] && ! echo "$out" | grep -q '^not ok' &&
	   echo "$out" | grep -q -e '^# backend cuda' -e '^ok [0-9]* - cuda: '; then
		echo "ok $n - $t passes on the cuda backend (fake driver)"
	else
		echo "not ok $n - $t on the cuda backend (fake driver), exit $rc"
	fi
done
