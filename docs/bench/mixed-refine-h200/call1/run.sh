#!/usr/bin/env bash
# Call 1: mixed precision. gpu_mixed tests; the mixed rows (FP32 FMA and 3xTF32 factors)
# new (factor + solve in one call, residuals read where they can stop the loop) against the
# base (a768602) alternating, n = 128 / 256 / 512, with the f64 rows; the BLOCKTRI_TRACE
# phases of the refinement at n = 256; ncu times of the refinement kernels; the f32
# factor's kernel sums at n = 256.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_mixed --test-threads=1 > "$OUT/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/test-gpu_mixed.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_mixed.log" | head -12
for round in 1 2; do
  for p in fma tf32x3; do
    for bin in blocktri blocktri-base; do
      m=blocktri-gpu-mixed; [ $p = fma ] && [ $bin = blocktri ] && m=blocktri-gpu,blocktri-gpu-mixed
      timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 --methods $m \
        --f32-products $p --runs 3 --out-dir "$OUT/bench-$bin-$p-$round" > "$OUT/bench-$bin-$p-$round.log" 2>&1
      echo "### $bin $p round $round rc=$?"; grep -E "^\|" "$OUT/bench-$bin-$p-$round/report.md" 2>/dev/null | grep -E "factor|solve" | head -20
    done
  done
done
for p in fma tf32x3; do
  BLOCKTRI_TRACE=1 timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed \
    --f32-products $p --runs 1 --out-dir "$OUT/trace-$p" > "$OUT/trace-$p.txt" 2>&1
  echo "### trace $p"; grep -E "trace: mixed" "$OUT/trace-$p.txt" | sort | uniq -c | sort -rn | head -12
  grep -E "trace: mixed" "$OUT/trace-$p.txt" | tail -14
done
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --kernel-name regex:refine --launch-count 10 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-refine.txt" 2>&1
grep -E "refine|duration|throughput" "$OUT/ncu-refine.txt" | head -40
timeout 120 $B/blocktri profile --generate 256,1024 --precision f32 --repeat 2 > "$OUT/profile-f32-256.txt" 2>&1
awk '$1 ~ /^tiled_|^fused_|^level_/ {t[$1] += $NF; c[$1]++} /^sum of/ {print}
     END {for (k in t) printf "%-28s %4d launches %11.1f us\n", k, c[k], t[k]}' "$OUT/profile-f32-256.txt" | sort -k4 -rn | head -20
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
