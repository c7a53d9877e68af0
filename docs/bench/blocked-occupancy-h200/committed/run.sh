#!/usr/bin/env bash
# The committed build (per-level block sizes, caps, the single launch's start): GPU tests,
# memcheck on the blocked cases, and our rows of the FP64 sweep and horizon at n = 32, 64.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_cholesky.log" | head -12
for tool in memcheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_cholesky_every_family > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for p in f64 f32; do
  timeout 120 $B/blocktri bench --full --suites horizon,fp64-sweep --batches 1 --nblocks 512,2048,16384 --block-sizes 32,64 --precision $p --methods blocktri-gpu --runs 7 --out-dir $OUT/b-$p > /dev/null 2>&1
  echo "$p: $(grep -E 'blocktri-gpu \| (factor|solve|factor\+solve) \|' $OUT/b-$p/report.md | awk -F'|' '{printf "N=%s n=%s %s %s %s| ", $3, $4, $6, $7, $9}')"
done
date -u >> $OUT/device.txt
