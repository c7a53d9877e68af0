#!/usr/bin/env bash
# Call 5: the committed build beside the peers (vendor-schur, cuDSS) at n = 128, 256, and
# f32 base against new.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 150 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/peers > /dev/null 2>&1
grep -E '\| (factor|solve|factor\+solve) \|' $OUT/peers/report.md | awk -F'|' '{printf "n=%s %s %s %s %s\n", $4, $5, $6, $7, $9}'
for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 60 $bin bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --methods blocktri-gpu --runs 3 --out-dir $OUT/f32-$v > /dev/null 2>&1
  echo "f32 $v: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/f32-$v/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
done
tar -C $OUT -cJf $OUT/results.tar.xz peers f32-base f32-new && rm -rf $OUT/peers $OUT/f32-*
date -u >> "$OUT/device.txt"
