#!/usr/bin/env bash
# Entry 96: do 128 x 64 column-update tiles (a third fewer L2 bytes per flop) pay now that
# the fused update + solve is L2-bound (call 1)? With 948fe72's binary, no build:
# default, the unfused column steps (BLOCKTRI_UPDATE_TRSM_NODES=1000000: `update` then
# `trsm`) on 64 x 64 tiles, and the same with the opt-in Tall update
# (BLOCKTRI_UPDATE_PRODUCT=tall); two rounds, then one profile each at n = 512.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri-base
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
one() { # name env...
  local name=$1; shift
  env "$@" timeout 120 $B bench --full --suites fp64-sweep --block-sizes 512,1024 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$name-$round" > "$OUT/r/bench-$name-$round.log" 2>&1
  echo "### $name round $round rc=$?"
  grep -E '^fp64' "$OUT/r/bench-$name-$round.log" | grep -v transfer | awk -v v=$name -v r=$round '{print v, r, $6, $7, $9, $10, $11}' >> "$OUT/summary.txt"
}
for round in 1 2; do
  one default X=1
  one unfused BLOCKTRI_UPDATE_TRSM_NODES=1000000
  one unfused-tall BLOCKTRI_UPDATE_TRSM_NODES=1000000 BLOCKTRI_UPDATE_PRODUCT=tall
done
grep factor "$OUT/summary.txt"
for cfg in "default X=1" "unfused BLOCKTRI_UPDATE_TRSM_NODES=1000000" "unfused-tall BLOCKTRI_UPDATE_TRSM_NODES=1000000 BLOCKTRI_UPDATE_PRODUCT=tall"; do
  set -- $cfg; name=$1; shift
  env "$@" timeout 60 $B profile --generate 512,512 --repeat 1 > "$OUT/r/profile-$name-512x512.txt" 2>&1
  echo "### profile $name $(tail -1 $OUT/r/profile-$name-512x512.txt)"
  awk -v v=$name '$2=="0" && $1 ~ /update|trsm/ {s[$1]+=$NF} END{for(k in s) print v, "level0", k, s[k]}' "$OUT/r/profile-$name-512x512.txt"
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
