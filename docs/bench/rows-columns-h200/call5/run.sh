#!/usr/bin/env bash
# Call 5: where the segment path's time goes now (BLOCKTRI_TRACE phases), n = 64 / 32 / 16 at
# a 512M cap, the committed binary (call 4's).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for g in 1,32768,64 1,131072,32 1,262144,16; do
  echo "== solve --generate $g, cap 512M, BLOCKTRI_TRACE=1" >> "$OUT/trace.txt"
  BLOCKTRI_TRACE=1 BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate $g >> "$OUT/trace.txt" 2>&1
done
grep -vE '^\s*$' "$OUT/trace.txt" | tail -150
date -u >> "$OUT/device.txt"
