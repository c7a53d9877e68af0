#!/usr/bin/env bash
# Entry 99, call 5: the committed form (inverses from 3 tiles; the look-ahead of calls 3-4
# not kept): gpu_cholesky's tiled cases, gpu_mixed, memcheck and synccheck on
# sanitize_cholesky_tiled; one f64 bench row at n = 192 and 256 as a check.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 130 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
timeout 30 $T/gpu_mixed --include-ignored --test-threads=1 > "$OUT/r/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_mixed.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck; do
  timeout 40 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
timeout 40 $B/blocktri bench --full --suites fp64-sweep --block-sizes 192,256 --precision f64 \
  --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64" > "$OUT/r/f64.log" 2>&1
grep -E '^fp64' "$OUT/r/f64.log" | grep -v transfer | tee "$OUT/summary.txt"
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
