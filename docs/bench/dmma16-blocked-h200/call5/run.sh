#!/usr/bin/env bash
# Call 5: launch shapes of the committed build (n5) re-checked at padded size 32 after the
# sm_90 tiles: per-level block size (BLOCKTRI_BLOCKED_THREADS 64 / 96 = default / 128) and
# where the single launch starts (BLOCKTRI_DATAFLOW_PER_SM 1 / 2 = default / 4). OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
r() { timeout 100 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor) \|' $OUT/$1/report.md | awk -F'|' '{printf "N=%s n=%s %s | ", $3, $4, $7}')"; }
b() { r env "$@" $B/blocktri-n5 bench --full --suites horizon --batches 1 --nblocks 512,4096,8192,16384 --block-sizes 32 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/$name; sum $name; }
for round in 1 2; do
  name=default-$round b X=1
  name=threads64-$round b BLOCKTRI_BLOCKED_THREADS=64
  name=threads128-$round b BLOCKTRI_BLOCKED_THREADS=128
  name=persm1-$round b BLOCKTRI_DATAFLOW_PER_SM=1
  name=persm4-$round b BLOCKTRI_DATAFLOW_PER_SM=4
done
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d default-* threads* persm*) && rm -rf $OUT/default-* $OUT/threads* $OUT/persm*
date -u >> "$OUT/device.txt"
