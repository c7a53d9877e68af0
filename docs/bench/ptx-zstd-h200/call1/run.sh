#!/usr/bin/env bash
# Session 2026-12-03, call 1: the embedded PTX as zstd frames (entry 103). The new build
# against the previous one (base = 5915301) for the first load of the module (`blocktri
# info`'s "PTX ... loaded in"), alternating; then the kernels of the new build: every kernel
# compiled alone (gpu_modules), gpu_cholesky whole, the kernel kit's example, a solve.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
ls -la $B $T | tee -a "$OUT/device.txt"
# Warm the driver's JIT cache for both builds' smallest kernel first, then alternate.
for b in base new; do $B/blocktri-$b info > /dev/null 2>&1; done
for i in 1 2 3 4 5; do for b in base new; do
  echo "$b $i $($B/blocktri-$b info 2>&1 | grep -o 'PTX sm_[0-9]* loaded in [0-9.]* s')"
done; done | tee "$OUT/r/load.txt"
$B/blocktri-new info 2>&1 | head -4
timeout 300 $T/gpu_modules --include-ignored --test-threads=1 > "$OUT/r/gpu_modules.log" 2>&1
echo "gpu_modules rc=$? $(grep -E 'test result' "$OUT/r/gpu_modules.log" | tail -1)"
timeout 240 $T/gpu_cholesky --include-ignored > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
$B/custom-kernel 4194304 2>&1 | tail -3
$B/blocktri-new solve --generate 4096,16 2>&1 | tail -4
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
