#!/usr/bin/env bash
# Call 2: the residual reading every stored block once (two kernels). gpu_mixed,
# gpu_modules; compute-sanitizer on sanitize_mixed_refinement; the mixed rows new against
# the base (a768602) alternating, n = 128 / 256 / 512, with the f64 rows; the trace at
# n = 256; ncu times of the refinement kernels.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_mixed gpu_modules; do
  timeout 200 $T/$t --test-threads=1 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_mixed_refinement > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do
  for p in tf32x3 fma; do
    for bin in blocktri blocktri-base; do
      m=blocktri-gpu-mixed; [ $p = fma ] && [ $bin = blocktri ] && [ $round = 1 ] && m=blocktri-gpu,blocktri-gpu-mixed
      timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 --methods $m \
        --f32-products $p --runs 3 --out-dir "$OUT/bench-$bin-$p-$round" > "$OUT/bench-$bin-$p-$round.log" 2>&1
      echo "### $bin $p round $round rc=$?"; grep -E 'fp64-sweep f64' "$OUT/bench-$bin-$p-$round.log" | grep -v transfer | awk '{print $5, $6, $7, $8}' | tr '\n' ';'; echo
    done
  done
done
BLOCKTRI_TRACE=1 timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed \
  --f32-products tf32x3 --runs 1 --out-dir "$OUT/trace-tf32x3" > "$OUT/trace-tf32x3.txt" 2>&1
echo "### trace tf32x3"; grep -E "trace: mixed" "$OUT/trace-tf32x3.txt" | sort | uniq -c | sort -rn | head -8
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --kernel-name regex:refine_residual --launch-count 6 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum \
  $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-refine.txt" 2>&1
grep -E "refine_|duration|throughput|bytes_read" "$OUT/ncu-refine.txt" | head -30
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/ncu-bench "$OUT"/trace-*/
date -u >> "$OUT/device.txt"
