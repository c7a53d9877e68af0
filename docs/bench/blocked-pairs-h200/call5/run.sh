#!/usr/bin/env bash
# Call 5: f32 of the final build f (f32 on the pre-pair loops) against base, f64 spot check.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
r() { timeout 100 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s | ", $2, $3, $4, $6, $7}')"; }
for round in 1 2; do for v in base f; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,16384 --block-sizes 32,64 --precision f32 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-f32-$v-$round; sum b-f32-$v-$round
done; done
for v in base f; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f32 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
r $B/blocktri-f bench --full --suites fp64-sweep --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/f64-f; sum f64-f
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-* batch-* f64-*) && rm -rf $OUT/b-* $OUT/batch-* $OUT/f64-*
date -u >> "$OUT/device.txt"
