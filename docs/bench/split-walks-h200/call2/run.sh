#!/usr/bin/env bash
# Call 2: the GPU tests on the final build (split walks, the f32 plan without input
# buffers of its own when it rounds: gpu_memory_pressure), and compute-sanitizer memcheck,
# synccheck and racecheck on sanitize_cholesky_tiled (n = 150: split walks on every level,
# two passes of columns with k = 10) and sanitize_mixed_refinement.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_mixed gpu_transfers errors gpu_memory_pressure; do
  timeout 200 $T/$t --test-threads=1 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for case in sanitize_cholesky_tiled sanitize_mixed_refinement; do
  for tool in memcheck synccheck racecheck; do
    timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $case > "$OUT/$case-$tool.log" 2>&1
    echo "$case $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$case-$tool.log" | tr '\n' ' ')"
  done
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
