#!/usr/bin/env bash
# The wide products' launch threshold (blocks per SM, WIDE_WAVES = 2) at n = 512, 1024 after
# entry 76: the committed kernels (build dd5b409) under its environment override.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
row() { grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $1/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}'; }
for v in default BLOCKTRI_WIDE_WAVES=1 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_WAVES=4 default; do
  d=$OUT/$v-$RANDOM; mkdir -p $d
  env $( [ "$v" = default ] || echo $v ) timeout 50 $B/blocktri bench --full --suites fp64-sweep --block-sizes 512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $d > /dev/null 2>&1
  echo "$v: $(row $d)"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d *-[0-9]*) && rm -rf $OUT/*-[0-9]*
