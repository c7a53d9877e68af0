#!/usr/bin/env bash
# Call 4: #11's grid beside vendor-schur, vendor-seq and cuDSS 0.8 with the committed build
# (bin/blocktri of call 3's bundle).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; R=$OUT/r; mkdir -p $R
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for p in f64 f32; do
  timeout 240 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --precision $p --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 10 --out-dir $R/grid-$p > $R/grid-$p.log 2>&1; echo "grid-$p rc=$?" | tee -a $OUT/summary.txt
done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
