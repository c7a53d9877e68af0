#!/usr/bin/env bash
# Call 2: where the factor-only +1 % of call 1 comes from. bin/blocktri (call 1's change),
# bin/blocktri-b (the same without the first column's load issued before the Cholesky),
# bin/blocktri-old (a823497), alternating; factor-only profiles; then #11's grid beside
# vendor-schur, vendor-seq and cuDSS with bin/blocktri.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
bin_of() { case $1 in old) echo $B/blocktri-old;; b) echo $B/blocktri-b;; *) echo $B/blocktri;; esac; }
for g in 16384,16 4096,16; do for v in old new b; do
  timeout 40 $(bin_of $v) profile --generate $g --repeat 3 > "$R/profile-f-$v-${g/,/x}.txt" 2>&1
  timeout 40 $(bin_of $v) profile --generate $g --factor-solve --repeat 3 > "$R/profile-fs-$v-${g/,/x}.txt" 2>&1
  echo "profile $v $g rc=$?"
done; done
for round in 1 2; do for v in old new b; do for p in f64 f32; do
  timeout 100 $(bin_of $v) bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 8,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-$v-$p-$round" > "$R/bench-$v-$p-$round.log" 2>&1
  echo "$v $p $round rc=$?"
  grep -E '^horizon' "$R/bench-$v-$p-$round.log" | grep -v transfer | awk -v v=$v -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done; done
for p in f64 f32; do
  timeout 240 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --precision $p --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 10 --out-dir $R/grid-$p > $R/grid-$p.log 2>&1; echo "grid-$p rc=$?" | tee -a $OUT/summary.txt
done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
