#!/usr/bin/env bash
# Entry 99, call 1: (a) 6b32e0e (HEAD, the review mend of entry 98) on the GPU: gpu_cholesky's
# tiled cases, memcheck and synccheck on sanitize_cholesky_tiled. (b) the inverses on
# 4-tile blocks (blocktri-inv4) and on 2- to 4-tile blocks (blocktri-inv2) against HEAD
# (blocktri-head), alternating, two rounds: f64 n = 128 / 256 (N n = 262144) and the mixed
# rows at n = 256.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 150 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck; do
  timeout 80 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
for r in 1 2; do for v in head inv4 inv2; do
  timeout 60 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64-$v-$r" > "$OUT/r/f64-$v-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/f64-$v-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
  [ $v = inv2 ] && continue
  timeout 60 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 256 --precision f64 \
    --methods blocktri-gpu-mixed --f32-products auto --runs 5 --out-dir "$OUT/r/mixed-$v-$r" > "$OUT/r/mixed-$v-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/mixed-$v-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, "mixed", $0}' >> "$OUT/summary.txt"
done; done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
