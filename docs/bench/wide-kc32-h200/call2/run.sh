#!/usr/bin/env bash
# Entry 96, call 2: GPU tests of the 32-column Wide product, and memcheck, synccheck and
# racecheck on the tiled engine with the wide kernels forced at its small sizes.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky errors; do
  timeout 250 $T/$t --test-threads=1 > "$OUT/r/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/r/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64 timeout 200 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-wide-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (wide forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-wide-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
