#!/usr/bin/env bash
# Call 5: the final build (8e2a723) at the large blocks: mixed precision (3xTF32 and FMA
# factors) against the f64 factor + solve at n = 1024 (N = 256) and 2048 (N = 128, 3xTF32
# only), with
# the BLOCKTRI_TRACE residuals by pass at n = 1024.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for p in tf32x3 fma; do
  m=blocktri-gpu-mixed; sizes=1024; [ $p = tf32x3 ] && m=blocktri-gpu,blocktri-gpu-mixed && sizes=1024,2048
  timeout 280 $B/blocktri bench --full --suites fp64-sweep --block-sizes $sizes --precision f64 --methods $m \
    --f32-products $p --runs 3 --out-dir "$OUT/bench-$p" > "$OUT/bench-$p.log" 2>&1
  echo "### $p rc=$?"; grep -E 'fp64-sweep f64 +[0-9]' "$OUT/bench-$p.log" | grep -v transfer | awk '{print $5, $6, $7, $8, $10, $11}'
done
BLOCKTRI_TRACE=1 timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes 1024 --precision f64 --methods blocktri-gpu-mixed \
  --f32-products tf32x3 --runs 1 --out-dir "$OUT/trace" > "$OUT/trace.txt" 2>&1
grep -E "trace: mixed" "$OUT/trace.txt" | sort | uniq -c | sort -rn | head -8
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-* "$OUT"/trace
date -u >> "$OUT/device.txt"
