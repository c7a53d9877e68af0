#!/usr/bin/env bash
# Entry 95, call 3: the wide product at 32 columns per chunk (k-steps kept a loop) against
# 16 (call 1's change, blocktri-k16), alternating, two rounds; then the GPU tests and the
# sanitizers on the tiled engine with the wide kernels forced, on the 32-column build.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-k16 blocktri; do
    timeout 100 $B/$bin bench --full --suites fp64-sweep --block-sizes 512,1024 --precision f64 \
      --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$bin-$round" > "$OUT/r/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"
    grep -E '^fp64' "$OUT/r/bench-$bin-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  done
done
awk '{print $1,$2,$6,$7,$9,$10,$11}' "$OUT/summary.txt"
for t in gpu_cholesky errors; do
  timeout 250 $T/$t --test-threads=1 > "$OUT/r/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/r/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64 timeout 150 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-wide-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (wide forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-wide-$tool.log" | tr '\n' ' ')"
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
