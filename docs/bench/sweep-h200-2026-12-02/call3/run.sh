#!/usr/bin/env bash
# Session 2026-12-02 evening, call 3: call 2 measured our f64 factor at n >= 512 40-46 %
# slower than call 1 (the solve, memory-bound, unchanged): check the clocks and throttle
# reasons, re-measure ours alone, then the peers at the sizes the 24 GB budget skips
# (`--max-gb 100`: cuDSS at n = 512 and 1024, vendor-schur and vendor-seq at n = 2048).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
clocks() { nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv,noheader 2>/dev/null \
  || nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv,noheader; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u; clocks) | tee "$OUT/device.txt"
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > "$OUT/smi-before.txt" 2>&1
sweep() { # name limit_s args...
  local name=$1 lim=$2; shift 2
  ( while sleep 5; do clocks; done ) > "$OUT/$name-clocks.csv" 2>&1 & local mon=$!
  timeout $lim $B/blocktri bench --full --suites fp64-sweep --runs 3 --out-dir "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(date -u +%T)"; kill $mon
}
sweep ours 90 --precision f64 --block-sizes 256,512,1024,2048 --methods blocktri-gpu
grep -E "^fp64-sweep" "$OUT/ours.log" | grep -vE "transfer" | tr -s " " | cut -c1-120
sort "$OUT/ours-clocks.csv" | uniq -c | sort -rn | head -5
sweep peers 330 --precision f64 --block-sizes 512,1024,2048 --methods vendor-schur,vendor-seq,cudss --max-gb 100 --max-minutes 4
grep -E "^fp64-sweep" "$OUT/peers.log" | grep -vE "transfer|analysis" | tr -s " " | cut -c1-120
sort "$OUT/peers-clocks.csv" | uniq -c | sort -rn | head -5
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > "$OUT/smi-after.txt" 2>&1
date -u >> "$OUT/device.txt"
