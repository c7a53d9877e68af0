#!/usr/bin/env bash
# The segment path's pass 2 in pass 1's batch matrix buffers, so that a first call
# page-locks two matrix buffers instead of four (issue #12): the GPU host-path tests,
# then `blocktri solve` of one chain larger than a device-memory cap, first and second
# call: the build before it (blocktri-prev: the page-locked batches no longer scanned,
# docs/bench/segment-rhs-scan-h200) and this one alternating, two rounds; then a trace.
# Usage: OUT=... bash .gpub/run.sh [tests] [ab] [trace]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests ab trace}
if [[ " $steps " == *" tests "* ]]; then
for t in gpu_transfers; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  tail -c 60000 "$OUT/test-$t.log" > "$OUT/t" && mv "$OUT/t" "$OUT/test-$t.log"
done
fi
if [[ " $steps " == *" ab "* ]]; then
for case in "1,1048576,16 1G" "1,32768,64 512M"; do
  set -- $case
  for bin in blocktri-prev blocktri blocktri-prev blocktri; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
if [[ " $steps " == *" trace "* ]]; then
for bin in blocktri-prev blocktri; do
  BLOCKTRI_DEVICE_MEMORY_LIMIT=1G BLOCKTRI_TRACE=1 timeout 100 $B/$bin solve --generate 1,1048576,16 > "$OUT/trace-$bin-1048576-16.txt" 2>&1
  grep -E "prepare|factor\+solve: segments" "$OUT/trace-$bin-1048576-16.txt" | sed "s/^/$bin: /"
done
fi
date -u >> "$OUT/device.txt"
