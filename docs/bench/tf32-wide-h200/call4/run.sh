#!/usr/bin/env bash
# Call 4: the f64 pivots' reciprocal square root by one third-order step, where it is on
# the critical path of latency-bound factors (blocked n = 32, 64; tiled n = 128; rows
# n = 16): new against the base (HEAD 457ebe7), alternating, two rounds. Then the final
# build's fp64 sweep with the mixed rows (3xTF32) for the record, and the f32 3xTF32 and
# TF32 factors at n = 2048 (wide TF32 neighbour products from n = 1024).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
row() { grep -E "^\|" "$1/report.md" 2>/dev/null | grep -E "factor|solve" | grep -v transfer | head -24; }
for round in 1 2; do
  for bin in blocktri blocktri-base; do
    timeout 120 $B/$bin bench --full --suites fp64-sweep --block-sizes 32,64,128 --precision f64 --methods blocktri-gpu \
      --runs 5 --out-dir "$OUT/small-$bin-$round" > "$OUT/small-$bin-$round.log" 2>&1
    echo "### small $bin round $round rc=$?"; row "$OUT/small-$bin-$round" | grep -v "| solve"
    timeout 120 $B/$bin bench --full --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 16 --precision f64 \
      --methods blocktri-gpu --runs 20 --out-dir "$OUT/rows-$bin-$round" > "$OUT/rows-$bin-$round.log" 2>&1
    echo "### rows $bin round $round rc=$?"; row "$OUT/rows-$bin-$round" | grep -v "| solve"
  done
done
timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 \
  --methods blocktri-gpu,blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/sweep" > "$OUT/sweep.log" 2>&1
echo "### sweep rc=$?"; row "$OUT/sweep"
for p in tf32x3 tf32; do
  timeout 100 $B/blocktri bench --full --suites fp64-sweep --block-sizes 2048 --nblocks 128 --precision f32 --methods blocktri-gpu \
    --f32-products $p --runs 3 --out-dir "$OUT/n2048-$p" > "$OUT/n2048-$p.log" 2>&1
  echo "### n = 2048 $p rc=$?"; row "$OUT/n2048-$p"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d small-* rows-* sweep* n2048-*) && rm -rf $OUT/small-* $OUT/rows-* $OUT/sweep* $OUT/n2048-*
date -u >> "$OUT/device.txt"
