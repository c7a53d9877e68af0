#!/usr/bin/env bash
# Node walks, committed rule (walks up to 4 tiles and on crowded levels; perf-notes entry
# 47): the FP64 and f32 sweep at n = 512, alternating with the previous build.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
for p in f64 f32; do
  for round in 1 2; do
    for v in new base; do
      bin=$b; [ $v = base ] && bin=$base
      timeout 100 $bin bench --full --suites fp64-sweep --block-sizes 512,1024 --precision $p \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/$p-$v-$round > $OUT/$p-$v-$round.log 2>&1
      echo "$p $v $round: $(grep -E 'blocktri-gpu \| (solve|factor\+solve) \|' $OUT/$p-$v-$round/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
    done
  done
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
