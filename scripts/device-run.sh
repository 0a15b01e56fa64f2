#!/usr/bin/env bash
# scripts/device-run.sh (carried as .device/run.sh): runs on the GPU machine
# from the repository root. Unpacks the carried packages, finds cuDNN (the
# toolkit's, else the one PyTorch's wheels bring), builds the release
# tarball with CUDA, runs `make check` on the CUDA backend unless
# TP_DEVICE_CHECK=0 (only the tests TP_DEVICE_TESTS names, where set), then
# each argument as a command inside the build tree.
# Everything is logged under $OUT, which comes back.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export TP_REPO=$(pwd)
{
	echo "== machine"
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
	nvcc --version 2>&1 | tail -1; gcc --version | head -1
	ls /usr/local/cuda/lib64 2>&1 | grep -E 'cublas|cudnn|cudart' | head
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
mkdir -p /tmp/deps
for f in .device/debs/*.deb; do dpkg -x "$f" /tmp/deps; done
# Links a package makes absolute (zlib's libz.so) point into the host's
# tree, whose version may differ: point them at the unpacked files.
find /tmp/deps -type l | while read -r l; do
	t=$(readlink "$l")
	case $t in /*) [ -e "/tmp/deps$t" ] && ln -sf "/tmp/deps$t" "$l" ;; esac
done
export PATH=/tmp/deps/usr/bin:$PATH
export PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/deps/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=/tmp/deps
export CPPFLAGS="-I/tmp/deps/usr/include -I/tmp/deps/usr/include/x86_64-linux-gnu ${CPPFLAGS:-}"
export LDFLAGS="-L/tmp/deps/usr/lib/x86_64-linux-gnu -L/tmp/deps/usr/lib/x86_64-linux-gnu/openblas-pthread ${LDFLAGS:-}"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:/tmp/deps/usr/lib/x86_64-linux-gnu/blas:${LD_LIBRARY_PATH:-}
export URCU_CFLAGS="-I/tmp/deps/usr/include" URCU_LIBS="-L/tmp/deps/usr/lib/x86_64-linux-gnu -lurcu-cds -lurcu"
cudnn=
if [ ! -e /usr/local/cuda/lib64/libcudnn.so ]; then
	h=$(find / -xdev -name cudnn.h -path '*cudnn/include*' 2>/dev/null | head -1)
	[ -n "$h" ] && cudnn=--with-cudnn=$(dirname "$(dirname "$h")")
	echo "cuDNN: ${cudnn:-none found}" | tee -a "$OUT/machine.txt"
fi
if [ ! -d /tmp/build/tpager ]; then
	mkdir -p /tmp/build && tar -C /tmp/build -xzf .device/tpager-*.tar.gz &&
		mv /tmp/build/tpager-* /tmp/build/tpager
fi
cd /tmp/build/tpager || exit 1
if [ ! -f Makefile ]; then
	./configure --with-cuda=/usr/local/cuda $cudnn > "$OUT/configure.log" 2>&1 ||
		{ tail -30 "$OUT/configure.log"; cp config.log "$OUT/"; exit 1; }
	tail -9 "$OUT/configure.log"
fi
make -j16 > "$OUT/build.log" 2>&1 || { grep -B2 -A8 -m5 'error' "$OUT/build.log"; exit 1; }
echo "== built"
if [ "${TP_DEVICE_CHECK:-1}" != 0 ]; then
	tests=()
	[ -n "${TP_DEVICE_TESTS:-}" ] && tests=("TESTS=$TP_DEVICE_TESTS")
	TPAGER_TEST_BACKEND=cuda timeout "${TP_DEVICE_CHECK_S:-300}" make -j16 check \
		"${tests[@]}" > "$OUT/check.log" 2>&1
	grep -E '^(# |FAIL|ERROR|XPASS)' "$OUT/check.log" | tail -20
	grep -hE '^(not ok|ok .*# SKIP)' tests/*.log 2>/dev/null | sort | uniq -c |
		sort -rn | head -30 > "$OUT/notok.txt"
	cat tests/*.log > "$OUT/tests.log" 2>/dev/null
fi
n=0
for cmd in "$@"; do
	n=$((n + 1))
	echo "== $cmd"
	bash -c "$cmd" 2>&1 | tee "$OUT/cmd$n.log"
done
