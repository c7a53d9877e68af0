#!/usr/bin/env bash
# Where the blocked family's single launch starts: BLOCKTRI_DATAFLOW_PER_SM = 4 (default), 2, 1.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
for g in 4096,64 8192,32; do for v in 4 2 1; do f=$OUT/profile-${g/,/x}-$v.txt
  BLOCKTRI_DATAFLOW_PER_SM=$v timeout 60 $B/blocktri profile --generate $g --repeat 2 > $f 2>&1
  echo "$g per-sm $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s | ", $2, $NF}' $f) $(grep 'sum of' $f)"; done; done
for r in 1 2; do for v in 4 2 1; do for p in f64 f32; do
  BLOCKTRI_DATAFLOW_PER_SM=$v timeout 200 $B/blocktri bench --full --suites horizon,fp64-sweep --batches 1 --nblocks 512,2048,16384 --block-sizes 32,64 --precision $p --methods blocktri-gpu --runs 7 --out-dir $OUT/b-$p-$v-$r > /dev/null 2>&1
  echo "$p per-sm $v r$r: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$p-$v-$r/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"
done; done; done
date -u >> $OUT/device.txt
