#!/usr/bin/env bash
# factor_blocked32_f64 capped at 136 registers: five 96-thread blocks per SM instead of four
# (base = fcd3b6a's build).
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
for v in base new base new; do bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  f=$OUT/profile-8192x32-$v.txt; timeout 60 $bin profile --generate 8192,32 --repeat 2 > $f 2>&1
  echo "8192,32 $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s %s %s | ", $2, $4, $6, $NF}' $f)"; done
for r in 1 2; do for v in base new; do bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 100 $bin bench --full --suites horizon,fp64-sweep --batches 1 --nblocks 2048,16384 --block-sizes 32 --precision f64 --methods blocktri-gpu --runs 7 --out-dir $OUT/b-$v-$r > /dev/null 2>&1
  echo "$v r$r: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$v-$r/report.md | awk -F'|' '{printf "N=%s %s %s | ", $3, $6, $7}')"; done; done
date -u >> $OUT/device.txt
