#!/usr/bin/env bash
# Session 2026-12-02 afternoon, call 1: b17d320 (last session's review mend, never run on a
# GPU) under gpu_transfers (its new 3-tile chunked case), gpu_cholesky's tiled cases,
# gpu_mixed, memcheck and synccheck on sanitize_cholesky_tiled; then event-timed profiles
# (factor + solve) at the sizes furthest from #10's targets, to choose the next work.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 150 $T/gpu_transfers --include-ignored --test-threads=1 > "$OUT/r/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_transfers.log" | tail -1)"
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
for g in 8192,32 4096,64 2048,128 512,512; do
  timeout 40 $B/blocktri profile --generate $g --factor-solve --repeat 3 > "$OUT/profile-fs-${g/,/x}.txt" 2>&1
  echo "profile $g rc=$?"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
