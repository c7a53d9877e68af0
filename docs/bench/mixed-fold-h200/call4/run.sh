#!/usr/bin/env bash
# Call 4: the residual with 128-row passes for n <= 128 (refine_residual128), 256-row
# passes above; base = call 2's build (256-row passes everywhere). gpu_mixed;
# compute-sanitizer on sanitize_mixed_refinement (n = 7: the 128-row kernel; n = 300: the
# 256-row one); mixed (3xTF32) rows at n = 64, 128, 256, 512 new against the base,
# alternating, two rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 240 $T/gpu_mixed --test-threads=1 > "$OUT/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/test-gpu_mixed.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_mixed.log" | head -12
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_mixed_refinement > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do
  for bin in blocktri blocktri-base; do
    timeout 240 $B/$bin bench --full --suites fp64-sweep --block-sizes 64,128,256,512 --precision f64 --methods blocktri-gpu,blocktri-gpu-mixed \
      --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$bin-$round" > "$OUT/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"; grep -E '^fp64-sweep f64' "$OUT/bench-$bin-$round.log" | grep -v transfer | awk '{print $4":"$6":"$7"="$8}' | tr '\n' ' '; echo
  done
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg
date -u >> "$OUT/device.txt"
