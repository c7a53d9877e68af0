#!/usr/bin/env bash
# Call 3: the size check waits for the whole context (not only the solver's stream)
# before it fails (call 2: a mixed solver made after a dropped f64 solver was refused
# up to 1.06 times its need, the dropped solver's frees still held). The memory-pressure
# tests twice, and gpu_transfers (the chunk and segment paths, which make room the same way).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for i in 1 2; do
  timeout 200 $T/gpu_memory_pressure --test-threads=1 --nocapture > "$OUT/test-gpu_memory_pressure-$i.log" 2>&1
  echo "gpu_memory_pressure $i rc=$? $(grep -E 'test result' "$OUT/test-gpu_memory_pressure-$i.log" | tail -1)"
  grep -E "FAILED|panicked|solved|refused|skipping" "$OUT/test-gpu_memory_pressure-$i.log" | head -40
done
timeout 250 $T/gpu_transfers --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
date -u >> "$OUT/device.txt"
