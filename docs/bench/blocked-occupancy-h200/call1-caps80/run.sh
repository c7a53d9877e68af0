#!/usr/bin/env bash
# A/B of register caps on the blocked factor (base = HEAD 10eb409 binary).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; B=.gpub/bin
[ -d $B ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for f in .gpub/ptx/*.ptx; do echo "$(basename $f): $(ptxas -arch=sm_90 -v $f -o /dev/null 2>&1 | grep -E 'registers|spill' | tr '\n' ' ' | sed 's/ptxas info    ://g')"; done > $OUT/ptxas.txt
cat $OUT/ptxas.txt | cut -c1-300
for g in 8192,32 4096,64; do for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  f=$OUT/profile-${g/,/x}-$v.txt; timeout 60 $bin profile --generate $g --repeat 2 > $f 2>&1
  echo "$g $v: $(awk '$1 ~ /factor_blocked/ {printf "%s L%s %s us | ", $1, $2, $NF}' $f) $(grep 'sum of' $f)"
done; done
run() { local bin=$B/blocktri; [ $1 = base ] && bin=$B/blocktri-base
  timeout 200 $bin bench --full --suites fp64-sweep --block-sizes $3 --precision $4 --methods blocktri-gpu --runs 5 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"; }
for r in 1 2; do for v in base new; do run $v $r 32,64 f64; done; done
for v in base new; do run $v 1 32,64 f32; done
# batches S=1024,N=64 also use the blocked kernels? (chain engine by Auto) - horizon S=1 N=64..16384 at n=32,64
for v in base new; do timeout 200 $B/blocktri$([ $v = base ] && echo -base) bench --full --suites horizon --batches 1 --nblocks 64,512,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/hz-$v > /dev/null 2>&1
  echo "hz $v: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/hz-$v/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"; done
date -u >> $OUT/device.txt
