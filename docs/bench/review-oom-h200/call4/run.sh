#!/usr/bin/env bash
# Call 4: one mixed solver kept through every margin of the new memory test (refused at the
# small ones, it must solve at the large ones: a refusal loses nothing).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for i in 1 2; do
  timeout 200 $T/gpu_memory_pressure --test-threads=1 --nocapture > "$OUT/test-gpu_memory_pressure-$i.log" 2>&1
  echo "gpu_memory_pressure $i rc=$? $(grep -E 'test result' "$OUT/test-gpu_memory_pressure-$i.log" | tail -1)"
  grep -E "FAILED|panicked|solved|refused|skipping" "$OUT/test-gpu_memory_pressure-$i.log" | head -40
done
date -u >> "$OUT/device.txt"
