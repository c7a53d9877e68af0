#!/usr/bin/env bash
# Review mend: solve_forward_rows_warps through the shared forward chain
# (solve_l_by_shuffles) instead of its own copy; other PTX unchanged. A/B against
# 948fe72 (blocktri-base), alternating, two rounds: S = 1 solves at padded size 16 (the
# per-level forward sweep a warp per node), f64 and f32; then gpu_cholesky, and the
# three sanitizers on sanitize_cholesky_small (which runs those solves).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    timeout 100 $B/$bin bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 16 --precision f64,f32 \
      --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$bin-$round" > "$OUT/r/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"
    grep -E '^horizon' "$OUT/r/bench-$bin-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $2, $4, $7, $8, $9}' >> "$OUT/summary.txt"
  done
done
sort -k3,3 -k4,4n -k5,5 -k1,1 "$OUT/summary.txt" | grep -v " factor "
timeout 250 $T/gpu_cholesky --test-threads=1 > "$OUT/r/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-gpu_cholesky.log" | head -12
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_small > "$OUT/r/small-$tool.log" 2>&1
  echo "sanitize_cholesky_small $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/small-$tool.log" | tr '\n' ' ')"
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
