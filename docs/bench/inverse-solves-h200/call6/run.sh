#!/usr/bin/env bash
# Entry 98, call 6: the mixed-precision rows (f32 3xTF32 factor + refinement to f64
# accuracy, whose refinement passes are f32 solves) at n = 512, N = 512: 1fe8818's kernels
# (blocktri) against 5766ed8 (blocktri-base), alternating, medians of 5.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for r in 1 2; do for label in base new; do
  bin=blocktri; [ $label = base ] && bin=blocktri-base
  timeout 60 $B/$bin bench --suites horizon --batches 1 --nblocks 512 --block-sizes 512 --precision f64 \
    --methods blocktri-gpu-mixed --f32-products auto --runs 5 --out-dir "$OUT/r/bench-$label-$r" > "$OUT/r/bench-$label-$r.log" 2>&1
  grep -E '^horizon' "$OUT/r/bench-$label-$r.log" | grep -v transfer | grep -v skipped | awk -v v=$label -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
done; done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
