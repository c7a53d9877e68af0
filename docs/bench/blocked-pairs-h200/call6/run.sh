#!/usr/bin/env bash
# Call 6: f64 of the committed build g (f64 update loop only on the non-look-ahead warps) against base.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
r() { timeout 100 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"; }
for round in 1 2; do for v in base g; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-f64-$v-$round; sum b-f64-$v-$round
done; done
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-*) && rm -rf $OUT/b-*
date -u >> "$OUT/device.txt"
