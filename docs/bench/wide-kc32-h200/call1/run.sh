#!/usr/bin/env bash
# Entry 96, call 1: the Wide f64 product at 32 columns per chunk with a compiler barrier
# between its k-steps (blocktri) against 948fe72 (blocktri-base, 16 columns), alternating,
# two rounds of the fp64 sweep's n = 512 and 1024 (`--full`), one of n = 2048; per-launch
# profiles at n = 1024 of both.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    sizes=512,1024; [ $round = 1 ] && sizes=512,1024,2048
    timeout 150 $B/$bin bench --full --suites fp64-sweep --block-sizes $sizes --precision f64 \
      --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$bin-$round" > "$OUT/r/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"
    grep -E '^fp64' "$OUT/r/bench-$bin-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  done
done
awk '{print $1,$2,$6,$7,$9,$10,$11}' "$OUT/summary.txt"
for bin in blocktri-base blocktri; do
  timeout 60 $B/$bin profile --generate 256,1024 --factor-solve --repeat 1 > "$OUT/r/profile-$bin-256x1024.txt" 2>&1
  echo "### profile $bin $(tail -1 $OUT/r/profile-$bin-256x1024.txt)"
  grep -E "wide" "$OUT/r/profile-$bin-256x1024.txt" | awk -v v=$bin '{s[$1]+=$NF} END{for(k in s) print v, k, s[k]}'
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
