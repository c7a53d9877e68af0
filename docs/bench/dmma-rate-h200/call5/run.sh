#!/usr/bin/env bash
# Call 5: ncu on the microbenchmark's cp.async loop (47 TFLOP/s) beside the real wide
# neighbour product's first level-0 launch (N = 256, n = 1024: ~30 TFLOP/s), same sections.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
D=docs/bench/dmma-rate-h200
nvcc -O3 -arch=sm_90 -o /tmp/dmma_rate $D/dmma_rate.cu
S="--section SpeedOfLight --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats"
timeout 120 ncu --clock-control none $S -k regex:run_async --launch-skip 9 --launch-count 1 /tmp/dmma_rate > $OUT/ncu-micro.txt 2>&1; echo "micro rc=$?"
timeout 200 ncu --clock-control none $S -k regex:tiled_wide_neighbours_f64 --launch-count 1 .gpub/bin/blocktri profile --generate 256,1024 --repeat 1 > $OUT/ncu-real.txt 2>&1; echo "real rc=$?"
for f in micro real; do echo "== $f"; grep -E 'Duration|Grid Size|Registers|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|Active Warps Per|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|No Eligible|Block Limit' $OUT/ncu-$f.txt | head -30; done
