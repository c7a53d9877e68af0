#!/usr/bin/env bash
# Kernels compiled on first use, one module per kernel (docs/perf-notes.md entry 67): the
# first call of a process on a machine whose driver cache is cold, per-kernel against the
# whole module (BLOCKTRI_MODULE_LOADING=whole, same binary); the same calls warm; every
# kernel compiled ahead (`info --compile-all`); then the GPU tests and a timing A/B.
# Usage: OUT=... bash .gpub/run.sh [jit] [tests] [ab]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-jit tests ab}
TIMEFORMAT=%R
wall() { # label cache-dir command...: wall seconds of one process
  local label=$1 cache=$2; shift 2
  local t; t=$( { time CUDA_CACHE_PATH=$cache "$@" > "$OUT/$label.log" 2>&1; } 2>&1 )
  echo "$label rc=$? wall ${t}s $(grep -E 'compiled|loaded in|factor' "$OUT/$label.log" | head -2 | tr '\n' ' ' | cut -c1-200)"
}
if [[ " $steps " == *" jit "* ]]; then
  for g in 4096,16 1024,64 256,256; do
    c=/tmp/cache-$g; rm -rf $c; mkdir -p $c
    wall cold-perkernel-${g/,/x} $c timeout 200 $B solve --generate $g
    wall warm-perkernel-${g/,/x} $c timeout 200 $B solve --generate $g
    du -sh $c | sed "s/^/cache $g: /"
  done
  c=/tmp/cache-whole; rm -rf $c; mkdir -p $c
  wall cold-whole-4096x16 $c env BLOCKTRI_MODULE_LOADING=whole timeout 200 $B solve --generate 4096,16
  wall warm-whole-4096x16 $c env BLOCKTRI_MODULE_LOADING=whole timeout 200 $B solve --generate 4096,16
  du -sh $c | sed "s/^/cache whole: /"
  # (A first build compiled them on 1 or 16 threads: 49 s and 61 s; the driver compiles
  # one module at a time, so the option went.)
  c=/tmp/cache-all; rm -rf $c; mkdir -p $c
  wall compile-all-cold $c timeout 280 $B info --compile-all
  wall compile-all-warm $c timeout 100 $B info --compile-all
  du -sh $c | sed "s/^/cache all: /"
fi
mkdir -p /tmp/cache-all; export CUDA_CACHE_PATH=/tmp/cache-all
if [[ " $steps " == *" tests "* ]]; then
  for t in ${TESTS:-gpu_modules errors gpu_cholesky selinv gpu_mixed tridiag gpu_transfers arrow mpc kalman logdet}; do
    timeout 400 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_modules --test-threads=1 > "$OUT/memcheck.log" 2>&1
  echo "memcheck gpu_modules rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck.log" | tr '\n' ' ')"
fi
if [[ " $steps " == *" ab "* ]]; then
  for round in 1 2; do for v in whole perkernel; do
    e=; [ $v = whole ] && e=BLOCKTRI_MODULE_LOADING=whole
    env $e timeout 200 $B bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/ab-$v-$round > $OUT/ab-$v-$round.log 2>&1
    echo "$v $round: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/ab-$v-$round/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
  done; done
fi
date -u >> "$OUT/device.txt"
