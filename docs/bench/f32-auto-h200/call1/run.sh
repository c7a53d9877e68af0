#!/usr/bin/env bash
# Call 1: F32Products::Auto as the default (3xTF32 where the tiled engine runs). GPU tests
# (the new auto_products test, every f32 default path), memcheck on the tiled sanitizer case
# (its f32 cases now 3xTF32), and the f32 factor with auto against fma, n = 128 .. 1024;
# the mixed rows with their new default.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_mixed errors; do
  timeout 200 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
timeout 120 $CS --tool memcheck --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_cholesky_tiled > "$OUT/memcheck-tiled.log" 2>&1
echo "memcheck sanitize_cholesky_tiled rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck-tiled.log" | tr '\n' ' ')"
row() { grep -E "^\|" "$1/report.md" 2>/dev/null | grep -E "factor|solve" | grep -v transfer | head -24; }
for p in auto fma; do
  timeout 150 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f32 --methods blocktri-gpu \
    --f32-products $p --runs 3 --out-dir "$OUT/f32-$p" > "$OUT/f32-$p.log" 2>&1
  echo "### f32 $p rc=$?"; row "$OUT/f32-$p" | grep -v "| solve"
done
timeout 100 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed \
  --runs 3 --out-dir "$OUT/mixed" > "$OUT/mixed.log" 2>&1
echo "### mixed (default products) rc=$?"; row "$OUT/mixed"
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f32-* mixed* test-*.log memcheck-*.log) && rm -rf $OUT/f32-* $OUT/mixed* $OUT/test-*.log $OUT/memcheck-*.log
date -u >> "$OUT/device.txt"
