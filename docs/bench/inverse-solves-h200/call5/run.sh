#!/usr/bin/env bash
# Entry 98, call 5: the committed build (622f093, levels of at most 256 tile rows) under
# gpu_cholesky's tiled tests, gpu_transfers and memcheck on sanitize_cholesky_tiled (calls
# 1 and 3 ran the 32-node rule).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 150 $T/gpu_cholesky --test-threads=1 tiled > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-gpu_cholesky-tiled.log" | head -12
timeout 60 $T/gpu_transfers --test-threads=1 > "$OUT/r/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_transfers.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
timeout 60 $CS --tool memcheck --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-inverse-memcheck.log" 2>&1
echo "sanitize_cholesky_tiled memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/tiled-inverse-memcheck.log" | tr '\n' ' ')"
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
