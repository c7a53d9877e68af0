#!/usr/bin/env bash
# Call 5: the memory-pressure tests after the review mend (one settled_free helper: the
# context synchronized before every measure of free memory, the mixed test included).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for i in 1 2; do
  timeout 200 $T/gpu_memory_pressure --test-threads=1 --nocapture > "$OUT/test-gpu_memory_pressure-$i.log" 2>&1
  echo "gpu_memory_pressure $i rc=$? $(grep -E 'test result' "$OUT/test-gpu_memory_pressure-$i.log" | tail -1)"
  grep -E "FAILED|panicked|solved|refused|skipping" "$OUT/test-gpu_memory_pressure-$i.log" | head -40
done
date -u >> "$OUT/device.txt"
