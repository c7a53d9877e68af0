#!/usr/bin/env bash
# Session 2026-12-03, call 4: the committed build (90a260d) on the GPU: gpu_cholesky, the
# every-family, blocked-interlaced and column sanitizer cases under memcheck and synccheck,
# one factor + solve from the command line.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 250 $T/gpu_cholesky --include-ignored --test-threads=4 > "$OUT/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/gpu_cholesky.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for c in sanitize_cholesky_every_family sanitize_cholesky_blocked_interlaced sanitize_column_solves; do for tool in memcheck synccheck; do
  timeout 60 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$c-$tool.log" 2>&1
  echo "$c $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$c-$tool.log" | tr '\n' ' ')"
done; done
$B/blocktri solve --generate 4096,64 2>&1 | tail -3
date -u >> "$OUT/device.txt"
