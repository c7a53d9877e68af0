#!/usr/bin/env bash
# Session 2026-12-03 (late afternoon), call 1: the benchmark's warm-up now covers every
# rotated input copy (entry 107). Ours alone at 7 and 15 runs (median against minimum);
# #11's grid beside the peers in f64 (runs 15); #11's batch point S = 1024, N = 64, n = 16.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for runs in 7 15; do
  timeout 120 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096 --block-sizes 8,16 --nrhs 1 \
    --precision f64 --methods blocktri-gpu --runs $runs --out-dir $OUT/r/alone-$runs > /dev/null 2>&1; echo "alone-$runs rc=$?"
  grep -E "blocktri-gpu,f64,1,[0-9]+,(8|16),1,(factor|solve|factor\+solve)," $OUT/r/alone-$runs/rows.csv | cut -d, -f5,6,8-12
done
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
timeout 330 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --nrhs 1 \
  --precision f64 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 15 --max-minutes 4.5 --out-dir $OUT/r/peers-f64 > $OUT/r/peers-f64.log 2>&1
echo "peers-f64 rc=$?"
timeout 100 $B/blocktri bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 16 --nrhs 1 \
  --precision f64 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 15 --out-dir $OUT/r/batch > $OUT/r/batch.log 2>&1
echo "batch rc=$?"
grep -E ",(factor|solve|factor\+solve)," $OUT/r/batch/rows.csv | cut -d, -f2,4-12
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
