#!/usr/bin/env bash
# Graph-replay timings of this solver next to the GPU peers (horizon and batch sweeps).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
b=.gpu/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
$b profile --generate 16384,16 --kernels rows --repeat 3 2>&1 | head -18
$b bench --suites ${SUITES:-horizon} --methods blocktri-gpu,vendor-schur,cudss --out-dir "$OUT/bench" 2>&1 | grep -E "blocktri|vendor|cudss" | grep -v "wrote" | tee "$OUT/bench.log"
