#!/usr/bin/env bash
# Three variants in one call: dependent launches with the early trigger (blocktri), with the
# wait only (blocktri-waitonly: the next kernel launches as this one's blocks exit), and off.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
run() { # label binary env round
  env $3 timeout 200 $B/$2 bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 8,16,32 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/h-$1-$4" > "$OUT/b/h-$1-$4.log" 2>&1
  env $3 timeout 200 $B/$2 bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/b/s-$1-$4" > "$OUT/b/s-$1-$4.log" 2>&1
  echo "$1 $4 done"
}
for round in 1 2; do
  run trigger blocktri X=1 $round; run waitonly blocktri-waitonly X=1 $round; run off blocktri BLOCKTRI_DEPENDENT_LAUNCH=off $round
done
date -u >> "$OUT/device.txt"
tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
