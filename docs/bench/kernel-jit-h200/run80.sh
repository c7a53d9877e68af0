#!/usr/bin/env bash
# The default build (sm_80 PTX only, what `cargo add` gives without BLOCKTRI_PTX_ARCHS) on
# the H200: cold and warm first calls with per-kernel modules, every kernel compiled alone,
# and the GPU tests that load kernels (docs/perf-notes.md entry 67).
# Usage: OUT=... bash .gpub/run80.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
TIMEFORMAT=%R
wall() { # label cache-dir command...
  local label=$1 cache=$2; shift 2
  local t; t=$( { time CUDA_CACHE_PATH=$cache "$@" > "$OUT/$label.log" 2>&1; } 2>&1 )
  echo "$label rc=$? wall ${t}s $(grep -E 'compiled|loaded in|factor' "$OUT/$label.log" | head -2 | tr '\n' ' ' | cut -c1-200)"
}
for g in 4096,16 256,256; do
  c=/tmp/cache80-$g; rm -rf $c; mkdir -p $c
  wall cold80-${g/,/x} $c timeout 200 $B solve --generate $g
  wall warm80-${g/,/x} $c timeout 200 $B solve --generate $g
done
c=/tmp/cache80-all; rm -rf $c; mkdir -p $c
wall compile-all-cold80 $c timeout 280 $B info --compile-all
export CUDA_CACHE_PATH=$c
for t in gpu_modules errors gpu_cholesky; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test80-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test80-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test80-$t.log" | head -12
done
