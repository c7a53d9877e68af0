#!/usr/bin/env bash
# Call 7: the segment batch buffers page-locked at once (blocktri) against call 6's binary
# (blocktri-prev): first and second calls, alternating, with one BLOCKTRI_TRACE run each.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for r in 1 2 3; do
  for c in "512M 1,32768,64" "512M 1,262144,16" "1G 1,1048576,16"; do
    set -- $c
    for bin in blocktri blocktri-prev; do
      echo "== $bin solve --generate $2, cap $1, run $r" >> "$OUT/segments.txt"
      BLOCKTRI_DEVICE_MEMORY_LIMIT=$1 timeout 90 $B/$bin solve --generate $2 2>&1 | grep -E "factor\+solve:|rror" >> "$OUT/segments.txt"
    done
  done
done
cat "$OUT/segments.txt"
for bin in blocktri blocktri-prev; do
  echo "== $bin solve --generate 1,1048576,16, cap 1G, BLOCKTRI_TRACE=1" >> "$OUT/trace.txt"
  BLOCKTRI_TRACE=1 BLOCKTRI_DEVICE_MEMORY_LIMIT=1G timeout 90 $B/$bin solve --generate 1,1048576,16 2>&1 | grep -E "^==|prepare|factor\+solve: segments|factor\+solve: [0-9]" >> "$OUT/trace.txt"
done
cat "$OUT/trace.txt"
date -u >> "$OUT/device.txt"
