#!/usr/bin/env bash
# Call 1: the residual on the diagonal blocks' lower triangles and the f32 tiled prep
# rounding A from f64 (prediction.txt). GPU tests (gpu_mixed, gpu_cholesky, errors,
# gpu_modules); compute-sanitizer on sanitize_mixed_refinement (n = 300 FMA: the tiled f32
# plan with the rounding prep, two residual row passes); mixed (3xTF32) and f64 rows new
# against the base (c182869) alternating, two rounds (n = 1024 in round 1); the trace at
# n = 256; ncu times of the residual, demote and prep kernels at n = 256.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_mixed gpu_modules errors gpu_cholesky; do
  timeout 240 $T/$t --test-threads=1 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_mixed_refinement > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do
  sizes=128,256,512; [ $round = 1 ] && sizes=128,256,512,1024
  for bin in blocktri blocktri-base; do
    timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes $sizes --precision f64 --methods blocktri-gpu,blocktri-gpu-mixed \
      --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$bin-$round" > "$OUT/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"; grep -E 'fp64-sweep f64' "$OUT/bench-$bin-$round.log" | grep -v transfer | awk '{print $3, $4, $5, $6, $7, $8}' | tr '\n' ';'; echo
  done
done
BLOCKTRI_TRACE=1 timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed \
  --f32-products tf32x3 --runs 1 --out-dir "$OUT/trace" > "$OUT/trace.txt" 2>&1
echo "### trace"; grep -E "trace: mixed" "$OUT/trace.txt" | sort | uniq -c | sort -rn | head -8
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for bin in blocktri blocktri-base; do
  timeout 200 $NCU --kernel-name regex:"refine_residual_f|refine_demote_matrix|tiled_prep" --launch-count 8 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum \
    $B/$bin bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --f32-products tf32x3 \
    --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-$bin.txt" 2>&1
  echo "### ncu $bin"; grep -E "refine_|tiled_prep|duration|throughput|bytes_" "$OUT/ncu-$bin.txt" | head -40
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/ncu-bench "$OUT"/trace/
date -u >> "$OUT/device.txt"
