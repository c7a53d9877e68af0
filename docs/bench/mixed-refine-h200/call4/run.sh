#!/usr/bin/env bash
# Call 4: the rounding of A to f32 with four loads per thread before its stores. Tests
# gpu_mixed, gpu_cholesky, errors; compute-sanitizer on sanitize_mixed_refinement; the
# mixed rows (3xTF32) new against 0c537a7 alternating, n = 128 / 256 / 512; ncu times of
# refine_demote_matrix.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_mixed gpu_cholesky errors; do
  timeout 300 $T/$t --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_mixed_refinement > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do
  for bin in blocktri blocktri-base; do
    timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 --methods blocktri-gpu-mixed \
      --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$bin-$round" > "$OUT/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"; grep -E 'fp64-sweep f64 +[0-9]' "$OUT/bench-$bin-$round.log" | grep -v transfer | awk '{print $5, $7, $8}' | tr '\n' ';'; echo
  done
done
NCU=ncu; command -v $NCU >/dev/null || NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --kernel-name regex:refine_demote_matrix --launch-count 2 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum \
  $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 --precision f64 --methods blocktri-gpu-mixed --runs 1 --out-dir "$OUT/ncu-bench" > "$OUT/ncu-demote.txt" 2>&1
grep -E "refine_|duration|throughput|bytes_read" "$OUT/ncu-demote.txt" | head -12
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-* "$OUT"/ncu-bench
date -u >> "$OUT/device.txt"
