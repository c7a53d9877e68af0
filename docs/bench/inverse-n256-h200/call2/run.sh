#!/usr/bin/env bash
# Entry 99, call 2: the kept form (blocktri-new: inverses from 4 tiles, INVERSE_MIN_TILES)
# against (a) inverses from 3 tiles (blocktri-inv3) at n = 192, N = 1365 and (b) the
# 128-tile-row cap (blocktri-c128) at n = 256, N = 1024; f64 and the mixed rows,
# alternating, two rounds. A profile of n = 256 (factor + solve). Then the kept form's
# tests: gpu_cholesky's tiled cases, gpu_mixed, racecheck on sanitize_cholesky_tiled.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
bench() { # binary n label round
  local v=$1 n=$2 r=$4
  timeout 40 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes $n --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64-$v-$n-$r" > "$OUT/r/f64-$v-$n-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/f64-$v-$n-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
  timeout 40 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes $n --precision f64 \
    --methods blocktri-gpu-mixed --f32-products auto --runs 5 --out-dir "$OUT/r/mixed-$v-$n-$r" > "$OUT/r/mixed-$v-$n-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/mixed-$v-$n-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, "mixed", $0}' >> "$OUT/summary.txt"
}
for r in 1 2; do bench new 192 x $r; bench inv3 192 x $r; bench new 256 x $r; bench c128 256 x $r; done
cat "$OUT/summary.txt"
timeout 40 $B/blocktri-new profile --generate 1024,256 --factor-solve > "$OUT/r/profile-new-256x1024.txt" 2>&1
tail -2 "$OUT/r/profile-new-256x1024.txt"
timeout 130 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
timeout 30 $T/gpu_mixed --include-ignored --test-threads=1 > "$OUT/r/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_mixed.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in racecheck memcheck; do
  timeout 180 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
