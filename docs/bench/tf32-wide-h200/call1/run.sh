#!/usr/bin/env bash
# Call 1 (measure before building): where the f32 factor with 3xTF32 products spends its
# time (`blocktri profile`, kernel sums) at n = 256 and n = 1024, against f64; `ncu` on one
# level-0 neighbour launch of each (the 64 x 64 TF32 product against the f64 128 x 128 one).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
sums() { awk '$1 ~ /^tiled_/ {t[$1] += $NF; c[$1]++} /^sum of/ {print}
  END {for (k in t) printf "%-34s %4d launches %11.1f us\n", k, c[k], t[k]}' "$1" | sort -k4 -rn | head -14; }
for g in 1024,256 256,1024; do
  for p in "--precision f64" "--precision f32 --f32-products tf32x3" "--precision f32 --f32-products tf32"; do
    tag=$(echo "$g $p" | tr -c 'a-z0-9' '_')
    timeout 120 $B/blocktri profile --generate $g $p --repeat 2 > "$OUT/profile-$tag.txt" 2>&1
    echo "### $g $p"; sums "$OUT/profile-$tag.txt"
  done
done
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for p in "--precision f64" "--precision f32 --f32-products tf32x3"; do
  tag=$(echo "$p" | tr -c 'a-z0-9' '_')
  timeout 200 $NCU --kernel-name regex:neighbours --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    $B/blocktri profile --generate 256,1024 $p --repeat 1 > "$OUT/ncu-$tag.txt" 2>&1
  echo "### ncu $p"; grep -E "tiled_|Duration|Throughput|Pipe|Issue Slots|Executed Ipc|Registers|Achieved Occupancy|Theoretical Occ|Stall|Warp Cycles" "$OUT/ncu-$tag.txt" | head -40
done
date -u >> "$OUT/device.txt"
