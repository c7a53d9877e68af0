#!/usr/bin/env bash
# Call 4: #11's grid at n = 8, 16 beside vendor-schur and cuDSS with the committed build, f64 and f32.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for p in f64 f32; do
  timeout 200 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16 --precision $p --methods blocktri-gpu,vendor-schur,cudss --runs 10 --out-dir $OUT/grid-$p > /dev/null 2>&1; echo "grid-$p rc=$?"
done
tar -C $OUT -cJf $OUT/results.tar.xz grid-f64 grid-f32 && rm -rf $OUT/grid-*
date -u >> "$OUT/device.txt"
