#!/usr/bin/env bash
# Call 3: the residual kernel's rows per pass (prediction.txt): blocktri (ROWS = 256, as
# committed in call 2), blocktri-rows128, blocktri-cap80 (ROWS = 128, 80 registers),
# blocktri-rows64; ncu times of the residual at n = 256 and the mixed (3xTF32) rows at
# n = 128, 256, 512, alternating, two rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
BINS="blocktri blocktri-rows128 blocktri-cap80 blocktri-rows64"
for bin in $BINS; do
  timeout 200 $NCU --kernel-name regex:"refine_residual_f" --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $B/$bin bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --f32-products tf32x3 \
    --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-$bin.txt" 2>&1
  echo "### ncu $bin"; grep -E "duration|throughput|bytes_|registers|warps_active" "$OUT/ncu-$bin.txt" | tail -5
done
for round in 1 2; do
  for bin in $BINS; do
    timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 --methods blocktri-gpu-mixed \
      --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$bin-$round" > "$OUT/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"; grep -E 'fp64-sweep f64' "$OUT/bench-$bin-$round.log" | grep -v transfer | awk '{print $3, $6, $7}' | tr '\n' ';'; echo
  done
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/ncu-bench
date -u >> "$OUT/device.txt"
