#!/usr/bin/env bash
# Call 2: the committed build (the f32 tiled prep rounding A from f64; the residual as in
# the base). GPU tests gpu_mixed, errors; compute-sanitizer on sanitize_mixed_refinement;
# f64 and mixed (3xTF32) rows new against the base (c182869) alternating, two rounds
# (n = 1024 in round 1); ncu of the residual in both builds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_mixed errors; do
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
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for bin in blocktri blocktri-base; do
  timeout 200 $NCU --kernel-name regex:"refine_residual_f" --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__registers_per_thread \
    $B/$bin bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --f32-products tf32x3 \
    --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-$bin.txt" 2>&1
  echo "### ncu $bin"; grep -E "duration|throughput|bytes_|registers" "$OUT/ncu-$bin.txt" | head -16
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/ncu-bench
date -u >> "$OUT/device.txt"
