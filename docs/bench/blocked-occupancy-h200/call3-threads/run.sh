#!/usr/bin/env bash
# Blocked factor occupancy, call 3: new = f64 per-level caps 128 (np 64) / 112 (np 32), f32 caps 80 on
# all four blocked kernels; newb = f64 uncapped, f32 caps 80 on the per-level kernels only.
# BLOCKTRI_BLOCKED_THREADS sets the per-level threads (variant suffix -T).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; B=.gpub/bin
[ -d $B ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
bin() { case $1 in base) echo $B/blocktri-base;; newb*) echo $B/blocktri-b;; *) echo $B/blocktri;; esac; }
thr() { case $1 in *-*) echo ${1#*-};; *) echo "";; esac; }
prof() { local g=$1 v=$2 f=$OUT/profile-${1/,/x}-$2-$3.txt
  BLOCKTRI_BLOCKED_THREADS=$(thr $v) timeout 60 $(bin $v) profile --generate $g --precision $3 --repeat 2 > $f 2>&1
  echo "$g $3 $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s %s %s | ", $2, $4, $6, $NF}' $f) $(grep 'sum of' $f)"; }
for v in base new-256 newb-192; do prof 4096,64 $v f64; done
for v in base new-128 newb-96 newb-128; do prof 8192,32 $v f64; done
for v in base new newb; do prof 512,32 $v f32; prof 4096,64 $v f32; done
run() { # variant round sizes precision suite-args
  BLOCKTRI_BLOCKED_THREADS=$(thr $1) timeout 200 $(bin $1) bench --full $5 --block-sizes $3 --precision $4 --methods blocktri-gpu --runs 7 --out-dir $OUT/b-$4-$1-$2-$3 > /dev/null 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$4-$1-$2-$3/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"; }
H="--suites horizon,fp64-sweep --batches 1 --nblocks 64,512,16384"
for r in 1 2; do
  for v in base new-256 newb-192; do run $v $r 64 f64 "$H"; done
  for v in base new-128 newb-96 newb-128; do run $v $r 32 f64 "$H"; done
  for v in base new newb; do run $v $r 32,64 f32 "$H"; done
done
date -u >> $OUT/device.txt
