#!/bin/sh
# SPDX-License-Identifier: MIT
# The vmm tests on the cuda backend, with tests/vmm-fake-libcuda.c standing
# in for the driver: the backend's own code runs where there is no GPU.
# One TAP point per test program; their output follows as comments.
b=${top_builddir:-.}
lib=$b/tests/.libs/libfakecuda.so
if [ ! -r "$lib" ]; then
	echo "1..0 # SKIP no fake driver library at $lib"
	exit 0
fi
progs="vmm-remap vmm-pool vmm-extents vmm-copy vmm-inject vmm-elapsed"
echo "1..6"
n=0
for t in $progs; do
	n=$((n + 1))
	out=$(TPAGER_TEST_BACKEND=cuda TPAGER_TEST_CUDA_LIBRARY=$lib \
	      "$b/tests/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ] && ! echo "$out" | grep -q '^not ok' &&
	   echo "$out" | grep -q -e '^# backend cuda' -e '^ok [0-9]* - cuda: '; then
		echo "ok $n - $t passes on the cuda backend (fake driver)"
	else
		echo "not ok $n - $t on the cuda backend (fake driver), exit $rc"
	fi
done
