#!/usr/bin/env bash
# The FP64 sweep (N n = 262144, n = 32 .. 2048) with the peers, f64 or f32 ($1), on the
# committed code. Usage: OUT=... bash .gpub/sweep.sh f64|f32
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
P=$1
timeout 560 .gpub/bin/blocktri bench --full --suites fp64-sweep --block-sizes ${SIZES:-32,64,128,256,512,1024,2048} --precision $P \
  --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs ${RUNS:-3} --out-dir $OUT/sweep-$P > $OUT/sweep-$P.log 2>&1
echo "sweep $P rc=$?"; grep -E "^\| " $OUT/sweep-$P/report.md | head -40
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
