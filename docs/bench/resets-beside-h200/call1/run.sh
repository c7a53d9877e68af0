#!/usr/bin/env bash
# Call 1: the fused engine's resets beside its kernels (prediction.txt). GPU tests, sanitizers on
# the small case, then the horizon grid (n = 8, 16, 32, 64) with BLOCKTRI_RESETS_BESIDE=0 and
# the default alternating, two rounds, f64; f32 at n = 16 once.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers gpu_mixed; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$R/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$R/test-$t.log" | tail -1)" | tee -a $OUT/summary.txt; grep -E "FAILED|panicked" -A3 "$R/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_small > "$R/small-$tool.log" 2>&1
  echo "sanitize_cholesky_small $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$R/small-$tool.log" | tr '\n' ' ')" | tee -a $OUT/summary.txt
done
for round in 1 2; do for w in 0 1; do
  BLOCKTRI_RESETS_BESIDE=$w timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16,32,64 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-r$w-f64-$round" > "$R/bench-r$w-f64-$round.log" 2>&1
  echo "r$w f64 $round rc=$?"
  grep -E '^horizon' "$R/bench-r$w-f64-$round.log" | grep -v transfer | awk -v v=r$w -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done
for w in 0 1; do
  BLOCKTRI_RESETS_BESIDE=$w timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 16 --precision f32 \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-r$w-f32" > "$R/bench-r$w-f32.log" 2>&1
  grep -E '^horizon' "$R/bench-r$w-f32.log" | grep -v transfer | awk -v v=r$w '{print v, 1, $0}' >> "$OUT/summary.txt"
done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
