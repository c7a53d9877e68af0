#!/usr/bin/env bash
# The tensor-copy fill microbenchmark (docs/perf-notes.md, entry 95; call 4 adds the fill order and 32-column chunks), compiled on the GPU machine.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
D=docs/bench/tma-rate-h200
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nvcc --version | tail -2; date -u) | tee "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -Xptxas -v -o /tmp/tma_rate $D/tma_rate.cu -L/usr/local/cuda/lib64/stubs -lcuda > "$OUT/build.txt" 2>&1; echo "build rc=$?"
grep -E 'error|registers|spill' "$OUT/build.txt" | head -30
cuobjdump --dump-sass /tmp/tma_rate | grep -cE 'DMMA' ; cuobjdump --dump-sass /tmp/tma_rate | grep -E 'UTMALDG|UBLKCP' | sort | uniq -c | head
timeout 300 /tmp/tma_rate 2>&1 | tee "$OUT/tma_rate.txt"
date -u >> "$OUT/device.txt"
