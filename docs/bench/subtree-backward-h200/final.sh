#!/usr/bin/env bash
# The committed build: GPU tests, memcheck, the launch sequence at n = 4, 8, 16. OUT must be set.
set -u; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for g in 16384,16 16384,8 1,50000,4; do
  $B/blocktri profile --generate $g --repeat 3 > $OUT/profile-${g//,/x}.txt 2>&1
  echo "$g: $(grep -E 'backward' $OUT/profile-${g//,/x}.txt | awk '{printf "%s/%s %s; ", $1, $2, $NF}')"
done
timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_cholesky.log" | head -12
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_large sanitize_segments_on_the_edges > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck.log" | tr '\n' ' ')"
date -u >> "$OUT/device.txt"
