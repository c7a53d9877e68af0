#!/usr/bin/env bash
# The one-tile potrf capped at 80 registers (3 blocks per SM instead of 2; f64 spills
# 196 bytes): per-kernel profiles and factor + solve alternating with the committed build.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
new=.gpub/bin/blocktri-potrf80; base=.gpub/bin/blocktri-base
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
for g in 2048,128 1024,256 512,512; do
  for v in new base; do
    bin=$new; [ $v = base ] && bin=$base
    f=$OUT/profile-${g/,/x}-$v.txt; timeout 60 $bin profile --generate $g --repeat 1 > $f 2>&1
    echo "$g $v potrf sum $(awk '$1 ~ /tiled_potrf/ {s+=$NF} END {print s}' $f) level0 $(awk '$1 ~ /tiled_potrf/ && $2==0 {s+=$NF} END {print s}' $f) top $(awk '$1 ~ /tiled_potrf/ && $3<=8 {s+=$NF} END {print s}' $f) $(grep 'sum of' $f)"
  done
done
run() { # variant round sizes precision
  local bin=$new; [ $1 = base ] && bin=$base
  timeout 150 $bin bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
    --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
}
for round in 1 2; do for v in new base; do run $v $round 128,256,512 f64; done; done
for v in new base; do run $v 1 128,256,512 f32; done
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
