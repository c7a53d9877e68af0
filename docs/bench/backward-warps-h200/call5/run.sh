#!/usr/bin/env bash
# Call 5: where the rows family's single launch starts, re-measured after entries 36-90
# (entry 18 chose 4 nodes per SM on the H100): BLOCKTRI_DATAFLOW_PER_SM 1 / 2 / 4 / 8 with
# the committed build (d8d8405), n = 8, 12, 16, two rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2; do for v in 1 2 4 8; do for p in f64 f32; do
  BLOCKTRI_DATAFLOW_PER_SM=$v timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,12,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-d$v-$p-$round" > "$R/bench-d$v-$p-$round.log" 2>&1
  echo "d$v $p $round rc=$?"
  grep -E '^horizon' "$R/bench-d$v-$p-$round.log" | grep -v transfer | awk -v v=d$v -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done; done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
