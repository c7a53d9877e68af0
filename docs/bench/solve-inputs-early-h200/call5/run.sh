#!/usr/bin/env bash
# Call 5: what bounds the per-level rows backward solve at n = 16 (entry 89's question), under
# ncu: the committed build's factor + solve at N = 16384, n = 16, the backward launches of
# levels 0-3 and the per-level factor's levels 0-1.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; W=/tmp/call5; mkdir -p $W
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
NCU=ncu; command -v $NCU >/dev/null || NCU=/usr/local/cuda/bin/ncu
sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis"
timeout 240 $NCU --kernel-name regex:'solve_backward_rows16_f64|factor_rows16_f64' --launch-skip 0 --launch-count 6 $sections \
  $B/blocktri profile --generate 16384,16 --factor-solve --repeat 1 > "$W/ncu-n16.txt" 2>&1
echo "ncu rc=$?"
grep -E '^  [a-z_0-9]+.*\(|Duration|Achieved Occupancy|Theoretical Occupancy|Block Limit|Registers Per|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Stall' "$W/ncu-n16.txt" | head -150 > "$OUT/summary.txt"
cat "$OUT/summary.txt" | head -80
tar -C $W -cJf $OUT/results.tar.xz .
date -u >> "$OUT/device.txt"
