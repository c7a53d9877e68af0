#!/usr/bin/env bash
# Register caps and per-level thread counts of the blocked factor (base = HEAD 10eb409 binary).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; B=.gpub/bin
[ -d $B ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
px() { ptxas -arch=sm_90 -v $1 -o /dev/null 2>&1 | grep -A1 "Compiling entry" | grep -E 'spill' | tr '\n' ' ' | sed 's/ptxas info    ://g'; ptxas -arch=sm_90 -v $1 -o /dev/null 2>&1 | grep -E "Used [0-9]+ registers" | tail -1 | grep -oE "Used [0-9]+ registers"; }
for f in .gpub/ptx/*.ptx; do echo "$(basename $f): $(px $f | tr '\n' ' ')"; done > $OUT/ptxas.txt
for cap in 96 104 120 128 144; do for k in factor_blocked64_f64 factor_blocked32_f64; do
  sed "s/^\.maxnreg [0-9]*/.maxnreg $cap/" .gpub/ptx/$k.ptx > /tmp/$k-$cap.ptx; echo "$k cap $cap: $(px /tmp/$k-$cap.ptx | tr '\n' ' ')"; done; done >> $OUT/ptxas.txt
cat $OUT/ptxas.txt | cut -c1-250
bin() { [ $1 = base ] && echo $B/blocktri-base || echo $B/blocktri; }
thr() { case $1 in new-*) echo ${1#new-};; *) echo "";; esac; }
prof() { local g=$1 v=$2 f=$OUT/profile-${1/,/x}-$2.txt
  BLOCKTRI_BLOCKED_THREADS=$(thr $v) timeout 60 $(bin $v) profile --generate $g --repeat 2 > $f 2>&1
  echo "$g $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s %s | ", $2, $4, $NF}' $f) $(grep 'sum of' $f)"; }
for v in base new new-256; do prof 4096,64 $v; done
for v in base new new-128 new-96; do prof 8192,32 $v; done
run() { # variant round sizes precision suite-args
  BLOCKTRI_BLOCKED_THREADS=$(thr $1) timeout 200 $(bin $1) bench --full $5 --block-sizes $3 --precision $4 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$4-$1-$2-$3 > /dev/null 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$4-$1-$2-$3/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"; }
for r in 1 2; do
  for v in base new new-256; do run $v $r 64 f64 "--suites fp64-sweep"; done
  for v in base new new-128 new-96; do run $v $r 32 f64 "--suites fp64-sweep"; done
done
for v in base new; do run $v 1 32,64 f32 "--suites fp64-sweep"; run $v 1 32,64 f32 "--suites horizon --batches 1 --nblocks 64,512,4096"; done
for v in base new new-256; do run $v 1 64 f64 "--suites horizon --batches 1 --nblocks 64,512,16384"; done
for v in base new new-128; do run $v 1 32 f64 "--suites horizon --batches 1 --nblocks 64,512,16384"; done
date -u >> $OUT/device.txt
