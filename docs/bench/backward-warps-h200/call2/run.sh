#!/usr/bin/env bash
# Call 2: both per-level solves a warp per node at padded size 16 (prediction.txt). GPU tests,
# sanitizers on the small case, profiles of solve and factor + solve with BLOCKTRI_SOLVE_WARPS
# 0 / 2 / 3, the horizon grid at n = 12, 16 alternating the three.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers errors; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$R/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$R/test-$t.log" | tail -1)" | tee -a $OUT/summary.txt; grep -E "FAILED|panicked" -A3 "$R/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_small sanitize_cholesky_large; do for tool in memcheck racecheck synccheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$R/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$R/$f-$tool.log" | tr '\n' ' ')" | tee -a $OUT/summary.txt
done; done
for g in 16384,16 4096,16; do for w in 0 2 3; do
  BLOCKTRI_SOLVE_WARPS=$w timeout 40 $B/blocktri profile --generate $g --repeat 3 > "$R/profile-solve-w$w-${g/,/x}.txt" 2>&1
  BLOCKTRI_SOLVE_WARPS=$w timeout 40 $B/blocktri profile --generate $g --factor-solve --repeat 3 > "$R/profile-fs-w$w-${g/,/x}.txt" 2>&1
  echo "profile w$w $g rc=$?"
done; done
for round in 1 2; do for w in 0 2 3; do for p in f64 f32; do
  BLOCKTRI_SOLVE_WARPS=$w timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 12,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-w$w-$p-$round" > "$R/bench-w$w-$p-$round.log" 2>&1
  echo "w$w $p $round rc=$?"
  grep -E '^horizon' "$R/bench-w$w-$p-$round.log" | grep -v transfer | awk -v v=w$w -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done; done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
