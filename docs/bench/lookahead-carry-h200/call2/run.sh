#!/usr/bin/env bash
# Entry 100, call 2: the same binary as call 1, BLOCKTRI_LOOKAHEAD=off against its default,
# alternating, two rounds: f64 n = 256 (four tiles: the look-ahead on the levels of fewer
# than 8 nodes) and mixed precision (3xTF32 f32 factor, whose plain updates run on every
# level of at most 63 nodes) at n = 256 and 512.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for r in 1 2; do for v in off on; do
  L=$([ $v = off ] && echo BLOCKTRI_LOOKAHEAD=off)
  env $L timeout 60 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256 \
    --precision f64 --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64-$v-$r" > "$OUT/r/f64-$v-$r.log" 2>&1
  env $L timeout 90 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256,512 \
    --precision f64 --methods blocktri-gpu-mixed --f32-products auto --runs 5 --out-dir "$OUT/r/mixed-$v-$r" > "$OUT/r/mixed-$v-$r.log" 2>&1
  grep -hE '^fp64' "$OUT/r/f64-$v-$r.log" "$OUT/r/mixed-$v-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
done; done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
