#!/usr/bin/env bash
# Session 2026-12-03 (evening), call 2: the committed rule (the block solve only for
# N <= 64 at padded sizes 4 and 8), A/B by BLOCKTRI_BLOCK_SOLVE_NODES=0 (the single launch,
# entry 105's schedule) in the same binary, alternating, three rounds, f64 and f32;
# #11's grid beside the peers (twice); GPU tests and the sanitizers.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 200 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 16,32,64,128 --block-sizes 4,8 --nrhs 1 \
  --precision $1 --methods blocktri-gpu --runs 15 --out-dir $OUT/r/$2 > /dev/null 2>&1; echo "$2 rc=$?"; }
for round in 1 2 3; do for p in f64 f32; do
  BLOCKTRI_BLOCK_SOLVE_NODES=0 s1 $p $p-off-$round; s1 $p $p-on-$round
done; done
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
for r in 1 2; do
  timeout 240 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --nrhs 1 \
    --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 7 --out-dir $OUT/r/peers-$r > $OUT/r/peers-$r.log 2>&1; echo "peers-$r rc=$?"
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for c in sanitize_rows_block_solve sanitize_cholesky_small; do for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/r/$c-$tool.log" 2>&1
  echo "$c $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/$c-$tool.log" | tr '\n' ' ')"
done; done
timeout 280 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
