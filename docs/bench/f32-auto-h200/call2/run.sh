#!/usr/bin/env bash
# Call 2: the auto-products test with its fused cases at N = 2 (call 1 compared bits at
# N = 64, where the rows family's atomic separator updates change the bits run to run),
# and the rest of gpu_cholesky once more.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_cholesky --include-ignored --test-threads=3 > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A2 "$OUT/test-gpu_cholesky.log" | cut -c1-300 | head -12
date -u >> "$OUT/device.txt"
