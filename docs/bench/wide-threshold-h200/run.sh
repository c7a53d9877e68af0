#!/usr/bin/env bash
# Wide (128 x 128) products below n = 512 now that their copies are cheap (entry 76): the
# committed build (dd5b409) with the thresholds moved by their environment overrides.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
row() { grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $1/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}'; }
for r in 1 2; do
  for v in "default" "BLOCKTRI_WIDE_MIN_BLOCK=128" "BLOCKTRI_WIDE_MIN_BLOCK=128 BLOCKTRI_WIDE_UPDATE=off" "BLOCKTRI_WIDE_MIN_BLOCK=128 BLOCKTRI_WIDE_WAVES=1"; do
    d=$OUT/$r-$(echo $v | tr ' =' '_-'); mkdir -p $d
    env $( [ "$v" = default ] || echo $v ) timeout 60 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $d > /dev/null 2>&1
    echo "r$r $v: $(row $d)"
  done
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d 1-* 2-*) && rm -rf $OUT/1-* $OUT/2-*
