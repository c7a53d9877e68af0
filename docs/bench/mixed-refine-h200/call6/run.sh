#!/usr/bin/env bash
# Call 6: where the tiled solve spends its time at n = 256, N = 1024 (the mixed
# refinement's f32 solves, and the f64 one): `blocktri profile` (factor, then solve, kernel
# by kernel with events), f32 and f64, the last of two repetitions.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for p in f32 f64; do
  timeout 120 $B/blocktri profile --generate 1024,256 --precision $p --repeat 2 > "$OUT/profile-$p.txt" 2>&1
  echo "### $p"; awk '$1 ~ /^tiled_/ {t[$1] += $NF; c[$1]++} /^sum of/ {print}
       END {for (k in t) printf "%-28s %4d launches %11.1f us\n", k, c[k], t[k]}' "$OUT/profile-$p.txt" | sort -k4 -rn
done
date -u >> "$OUT/device.txt"
