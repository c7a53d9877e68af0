#!/usr/bin/env bash
# Call 2: why f32 lost in call 1. base = 277e14e; two = call 1's build (interior chunks in a
# loop of their own, the multiply-add in two copies); one = one loop, the interior copies
# behind a uniform branch (one copy of the multiply-add). f64, f32 (FMA) and TF32 sweeps,
# two rounds; per-kernel sums.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
row() { grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $1/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}'; }
sums() { awk 'NR>1 && NF>=7 {s[$1]+=$NF} END {for (k in s) printf "%s=%.0f ", k, s[k]}' "$1"; }
for r in 1 2; do for v in base two one; do
  timeout 120 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --methods blocktri-gpu --runs 3 --out-dir $OUT/f32-$r-$v > /dev/null 2>&1
  echo "f32 r$r $v: $(row $OUT/f32-$r-$v)"
  timeout 120 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --f32-products tf32 --methods blocktri-gpu --runs 3 --out-dir $OUT/tf32-$r-$v > /dev/null 2>&1
  echo "tf32 r$r $v: $(row $OUT/tf32-$r-$v)"
  timeout 200 $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $OUT/f64-$r-$v > /dev/null 2>&1
  echo "f64 r$r $v: $(row $OUT/f64-$r-$v)"
done; done
for g in "2048,128 f32" "1024,256 f32" "256,1024 f64" "2048,128 f64"; do set -- $g
  for v in base two one; do
    f=$OUT/profile-${1/,/x}-$2-$v.txt; timeout 90 $B/blocktri-$v profile --generate $1 --precision $2 --repeat 2 > $f 2>&1
    echo "$1 $2 $v: $(sums $f) $(grep 'sum of kernel' $f)"
  done
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f32-* tf32-* f64-* profile-*) && rm -rf $OUT/f32-* $OUT/tf32-* $OUT/f64-* $OUT/profile-*
date -u >> "$OUT/device.txt"
