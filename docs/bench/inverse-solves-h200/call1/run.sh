#!/usr/bin/env bash
# Entry 98, call 1: correctness of the explicit top-level inverses on the GPU. gpu_cholesky,
# errors, gpu_mixed, selinv (default dispatch: the inverses on levels of <= 32 nodes at
# n > 256), then compute-sanitizer memcheck, synccheck and racecheck on
# sanitize_cholesky_tiled (n = 300 f64 with 9 columns in two passes and f32 with a batch of
# two, n = 450: every level inverts).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky:250 errors:40 gpu_mixed:60 selinv:60; do
  name=${t%:*}; lim=${t#*:}
  timeout $lim $T/$name --test-threads=1 > "$OUT/r/test-$name.log" 2>&1
  echo "$name rc=$? $(grep -E 'test result' "$OUT/r/test-$name.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$name.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 60 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-inverse-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-inverse-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
