#!/usr/bin/env bash
# The DMMA rate microbenchmark (entry 77), compiled on the GPU machine.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
D=docs/bench/dmma-rate-h200
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
nvcc -O3 -arch=sm_90 -Xptxas -v -o /tmp/dmma_rate $D/dmma_rate.cu 2>&1 | grep -E 'error|registers|spill' | head -20
cuobjdump --dump-sass /tmp/dmma_rate | grep -c DMMA
/tmp/dmma_rate | tee "$OUT/dmma_rate.txt"
