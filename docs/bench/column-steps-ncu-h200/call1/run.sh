#!/usr/bin/env bash
# Entry 96: what binds the tiled engine's column steps at level 0 of n = 512, N = 512
# (948fe72's binary, blocktri-base): `ncu` (SpeedOfLight, memory workload, DRAM and L2
# bytes) on one launch each of the fused update + solve at step 5, the wide pair update at
# step 6, the plain solve at step 0 and the wide neighbour products.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri-base
NCU=ncu; command -v $NCU >/dev/null || NCU=/usr/local/cuda/bin/ncu
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u; $NCU --version | tail -1) | tee "$OUT/device.txt"
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_dmma.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
for spec in tiled_update_trsm_f64:4 tiled_wide_update_f64:0 tiled_trsm_f64:0 tiled_wide_neighbours_f64:0; do
  k=${spec%:*}; skip=${spec#*:}
  timeout 120 $NCU --kernel-name $k --launch-skip $skip --launch-count 1 --section SpeedOfLight --metrics $M \
    $B profile --generate 512,512 --repeat 1 > "$OUT/r/ncu-$k-$skip.txt" 2>&1
  echo "### $k skip $skip rc=$?"
  grep -E "dram__|lts__|gpu__time|sm__pipe_fp64|dmma|warps_active|Memory Throughput|DRAM Throughput|Compute \(SM\)" "$OUT/r/ncu-$k-$skip.txt" | head -14
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
