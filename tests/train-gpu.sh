#!/bin/sh
# SPDX-License-Identifier: MIT
# tpager-train on the GPU: ResNet-50 and BERT-base at reduced size (64x64
# images of ten classes; two encoder layers at sequence 128) train 20 steps on the cuda
# backend, in FP32 and in TF32 (vmm.math), and under a 50% budget the
# final weights are bit-identical to
# the unconstrained run's, with recomputes and offloads both happening and
# the peak within the budget. Skipped, saying why, where no GPU is usable;
# TPAGER_TEST_BACKEND=cuda turns the skip into a failure.
top_builddir=${top_builddir:-.}
train="$top_builddir/tools/tpager-train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-train-gpu.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TPAGER_SYSCONF="$tmp/no-system-file"
unset TPAGER_CONF TPAGER_OPTS

if ! "$train" --backend cuda --model mlp --steps 1 --budget 100% --json \
	>/dev/null 2>"$tmp/err"; then
	why="no usable CUDA device ($(head -n 1 "$tmp/err"))"
	if [ "${TPAGER_TEST_BACKEND:-}" = cuda ]; then
		echo "1..1"
		echo "not ok 1 - TPAGER_TEST_BACKEND=cuda: $why"
		exit 1
	fi
	echo "1..0 # SKIP $why"
	exit 0
fi

. "${top_srcdir:-.}/tests/train-util.sh"

# trains NAME ARGS...: 20 steps on the GPU under 50%, checked.
trains() {
	name=$1; shift
	"$train" --backend cuda --steps 20 --budget 50% --json "$@" \
		> "$tmp/$name.json" 2>"$tmp/err"; rc=$?
	j=$(cat "$tmp/$name.json")
	echo "# $name: $j"
	ok $([ $rc = 0 ]; echo $?) "$name: exit 0 ($(head -c 200 "$tmp/err"))"
	ok $([ "$(echo "$j" | field "" weights_identical)" = true ]; echo $?) \
		"$name: final weights bit-identical under 50%"
	l0=$(echo "$j" | field unconstrained loss_first)
	l1=$(echo "$j" | field unconstrained loss_last)
	b1=$(echo "$j" | field budget loss_last)
	ok $(awk -v a="$l0" -v b="$l1" 'BEGIN { exit !(b < a) }'; echo $?) \
		"$name: the loss falls ($l0 -> $l1)"
	ok $([ "$l1" = "$b1" ]; echo $?) "$name: the same last loss under the budget"
	rec=$(echo "$j" | field budget recomputes)
	off=$(echo "$j" | field budget offloads)
	ok $([ "${rec:-0}" -gt 0 ] && [ "${off:-0}" -gt 0 ]; echo $?) \
		"$name: recomputes ($rec) and offloads ($off) both > 0"
	bp=$(echo "$j" | field budget phys_peak)
	bud=$(echo "$j" | field "" budget_bytes)
	ok $([ -n "$bp" ] && [ "$bp" -le "$bud" ]; echo $?) \
		"$name: peak $bp within the budget $bud"
}

echo "1..30"
# Ten classes: 1000 do not learn in 20 steps of 16 images.
trains resnet-50 --model resnet-50 --image 64 --batch 16 --classes 10
# The same with a convolution's scratch bounded (the lean algorithms,
# chosen alike under both budgets).
trains resnet-50-lean --model resnet-50 --image 64 --batch 16 --classes 10 \
	--set vmm.workspace_max=1M
# TF32 on the tensor cores (vmm.math): other bits, the same rules.
trains resnet-50-tf32 --model resnet-50 --image 64 --batch 16 --classes 10 \
	--set vmm.math=tf32
# BERT-base's layers on the defaults (SGD at 0.02), which once diverged.
trains bert-base --model bert-base --layers 2 --seq 128 --batch 8
trains bert-base-tf32 --model bert-base --layers 2 --seq 128 --batch 8 \
	--set vmm.math=tf32
