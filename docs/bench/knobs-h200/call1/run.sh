#!/usr/bin/env bash
# Entry 96, knobs: the tiled engine's dispatch thresholds, measured on the H100 before
# entry 95 sped up the wide products, re-measured on the H200 with 948fe72's binary
# (blocktri-base) through their environment overrides, alternating, two rounds:
# BLOCKTRI_WIDE_MIN_BLOCK=256 (wide neighbour products at n = 256), BLOCKTRI_WIDE_WAVES
# (1 or 0 blocks per SM instead of 2 before a level takes the wide products), and
# BLOCKTRI_UPDATE_TRSM_NODES (fused update + solve from 16 or 128 nodes instead of 64).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri-base
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
one() { # name sizes env...
  local name=$1 sizes=$2; shift 2
  env "$@" timeout 120 $B bench --full --suites fp64-sweep --block-sizes $sizes --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$name-$round" > "$OUT/r/bench-$name-$round.log" 2>&1
  echo "### $name round $round rc=$?"
  grep -E '^fp64' "$OUT/r/bench-$name-$round.log" | grep -v transfer | awk -v v=$name -v r=$round '{print v, r, $6, $7, $9, $10, $11}' >> "$OUT/summary.txt"
}
for round in 1 2; do
  one default-256 256 X=1
  one wide256 256 BLOCKTRI_WIDE_MIN_BLOCK=256
done
for round in 1 2; do
  one default 512,1024 X=1
  one waves1 512,1024 BLOCKTRI_WIDE_WAVES=1
  one waves0 512,1024 BLOCKTRI_WIDE_WAVES=0
  one utn16 512,1024 BLOCKTRI_UPDATE_TRSM_NODES=16
  one utn128 512,1024 BLOCKTRI_UPDATE_TRSM_NODES=128
done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
