#!/usr/bin/env bash
# Call 5: the final build (the cubic reciprocal-square-root step reverted, wide TF32
# neighbour products from n = 1024): GPU tests, and the rows factor at n = 16 back at the
# base's times.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_mixed errors gpu_modules; do
  timeout 240 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
timeout 120 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 16 --precision f64 \
  --methods blocktri-gpu --runs 20 --out-dir "$OUT/rows" > "$OUT/rows.log" 2>&1
echo "### rows rc=$?"; grep -E "^\|" "$OUT/rows/report.md" | grep -E "factor" | grep -v transfer
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d rows test-*.log) && rm -rf $OUT/rows $OUT/test-*.log $OUT/rows.log
date -u >> "$OUT/device.txt"
