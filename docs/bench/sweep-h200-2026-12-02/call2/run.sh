#!/usr/bin/env bash
# Session 2026-12-02 evening, call 2: the peers where call 1's 24 GB benchmark budget
# skipped them (f64, n = 512-2048, `--max-gb 120` on the 141 GB H200: cuDSS at n = 512 and
# 1024, vendor-schur and vendor-seq at n = 2048), then the f32 FP64-sweep with the peers
# (FP32 FMA products, the library default), then ours alone with `--f32-products auto`.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
sweep() { # name limit_s args...
  local name=$1 lim=$2; shift 2
  timeout $lim $B/blocktri bench --full --suites fp64-sweep --runs 3 --max-gb 120 --out-dir "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(date -u +%T)"
}
sweep f64-large 290 --precision f64 --block-sizes 512,1024,2048 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --max-minutes 4
sweep f32 200 --precision f32 --block-sizes 32,64,128,256,512,1024,2048 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --max-minutes 3
sweep f32-auto 70 --precision f32 --block-sizes 32,64,128,256,512,1024,2048 --methods blocktri-gpu --f32-products auto
for f in f64-large f32 f32-auto; do grep -E "^fp64-sweep" "$OUT/$f.log" | grep -vE "transfer|analysis" ; done | tr -s " " | cut -c1-150 | head -90
date -u >> "$OUT/device.txt"
