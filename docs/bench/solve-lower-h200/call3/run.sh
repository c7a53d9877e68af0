#!/usr/bin/env bash
# Session 2026-12-03 (afternoon), call 3: call 2's peer run read our n = 8 solve at N = 512
# and 4096 at 1.09-1.11x cuDSS's, where call 1 had measured the same (unchanged) rows kernels
# 20-30 % faster; n = 8 were that process's first configurations. The rows part of #11's grid
# again, twice in a row (the second process warm), same binary (fin).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
for r in 1 2; do
  timeout 200 $B/blocktri-fin bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16 --nrhs 1 \
    --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 7 --out-dir $OUT/r/peers-$r > $OUT/r/peers-$r.log 2>&1; echo "peers-$r rc=$?"
  grep -E "^\| 1 \|" $OUT/r/peers-$r/report.md | grep -E "blocktri-gpu|cudss" | grep -E "\| solve \|" | cut -c1-70
done
nvidia-smi --query-gpu=clocks.sm,clocks_throttle_reasons.active,power.draw --format=csv
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
