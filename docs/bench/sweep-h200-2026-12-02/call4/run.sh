#!/usr/bin/env bash
# Session 2026-12-02 evening, call 4: the default build now embeds sm_80 and sm_90 PTX
# (build.rs; calls 2-3 had run a binary built without BLOCKTRI_PTX_ARCHS=sm_90, i.e. the
# old default, sm_80 only, and its f64 factor was 23-49 % slower at n >= 256). Checks that
# the default build loads the sm_90 kernels (`blocktri info`), runs gpu_cholesky's tiled
# cases on it, and re-measures ours (f64; f32 with FMA and with auto products) on it.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
clocks() { nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader 2>/dev/null; }
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u; clocks) | tee "$OUT/device.txt"
$B/blocktri info > "$OUT/info.txt" 2>&1; echo "info rc=$?"; grep -iE "ptx|sm_|dependent" "$OUT/info.txt" | head -5
timeout 100 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-tiled.log" | tail -1)"
sweep() { # name limit_s args...
  local name=$1 lim=$2; shift 2
  timeout $lim $B/blocktri bench --full --suites fp64-sweep --runs 3 --methods blocktri-gpu --out-dir "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $(date -u +%T) $(clocks)"
}
sweep f64 60 --precision f64 --block-sizes 256,512,1024,2048
sweep f32 75 --precision f32 --block-sizes 32,64,128,256,512,1024,2048
sweep f32-auto 60 --precision f32 --block-sizes 128,256,512,1024,2048 --f32-products auto
for f in f64 f32 f32-auto; do grep -E "^fp64-sweep" "$OUT/$f.log" | grep -vE "transfer" ; done | tr -s " " | cut -c1-110
for f in f64 f32 f32-auto; do rm -f "$OUT/$f/"*.svg "$OUT/$f/report.json"; done
date -u >> "$OUT/device.txt"
