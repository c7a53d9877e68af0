#!/usr/bin/env bash
# Entry 95, call 2: the fp64 sweep's n = 1024 and 2048 (`--full`: call 1's plain runs skip
# sizes above the default memory budget), base = 9688d4b (blocktri-base) and the change
# (blocktri) alternating, two rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    timeout 200 $B/$bin bench --full --suites fp64-sweep --block-sizes 1024,2048 --precision f64 \
      --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$bin-$round" > "$OUT/r/bench-$bin-$round.log" 2>&1
    echo "### $bin round $round rc=$?"
    grep -E '^fp64' "$OUT/r/bench-$bin-$round.log" | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  done
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
