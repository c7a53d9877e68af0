#!/usr/bin/env bash
# How a factor + solve's device time grows with the right-hand-side columns at the shape
# of a segment batch (8 systems of 8738 blocks, n = 16), which pass 1 solves with k + 2n = 33.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for k in 1 4 8 16 33; do
  BLOCKTRI_TRACE=1 timeout 60 $B/blocktri solve --generate 8,8738,16 --nrhs $k > "$OUT/k$k.txt" 2>&1
  echo "k=$k: $(grep -E 'launch, check' "$OUT/k$k.txt" | awk '{printf "%s ", $(NF-1)}') | $(grep -E '^factor\+solve:' "$OUT/k$k.txt")"
done
