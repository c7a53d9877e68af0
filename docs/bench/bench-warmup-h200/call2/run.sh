#!/usr/bin/env bash
# Session 2026-12-03 (late afternoon), call 2: #11's grid beside the peers in f32 (runs 15),
# the same binary as call 1.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
timeout 330 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --nrhs 1 \
  --precision f32 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 15 --max-minutes 4.5 --out-dir $OUT/r/peers-f32 > $OUT/r/peers-f32.log 2>&1
echo "peers-f32 rc=$?"
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
