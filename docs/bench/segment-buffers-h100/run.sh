#!/usr/bin/env bash
# The segment path's batch buffers kept between calls (issue #12): the GPU transfer tests,
# then `blocktri solve` under device-memory caps, the previous build (blocktri-base, HEAD
# before the change) and this one alternating; the CLI prints the first and second call.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 200 .gpub/tests/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"
for case in "1,262144,16 256M" "1,1048576,16 1G" "1,32768,64 512M"; do
  set -- $case
  for bin in blocktri-base blocktri blocktri-base blocktri; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
BLOCKTRI_DEVICE_MEMORY_LIMIT=1G BLOCKTRI_TRACE=1 timeout 100 $B/blocktri solve --generate 1,1048576,16 > "$OUT/trace-1048576-16.txt" 2>&1
grep -E "prepare|segments" "$OUT/trace-1048576-16.txt" | head
