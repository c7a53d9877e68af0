#!/usr/bin/env bash
# The chunk planner counts free memory again after the device settles also under a chunk cap
# (perf-notes entry 92, last part): the GPU tests of the chunk, segment and memory-pressure
# paths on the committed build's test executables.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_transfers gpu_memory_pressure; do
  timeout 280 $T/$t --include-ignored --test-threads=2 > "$R/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$R/test-$t.log" | tail -1)" | tee -a $OUT/summary.txt; grep -E "FAILED|panicked" -A3 "$R/test-$t.log" | head -12
done
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
