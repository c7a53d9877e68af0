#!/usr/bin/env bash
# Session 2026-12-03, call 2: the decompression moved beside the context creation (new)
# against call 1's build that decompressed after it (serial) and the uncompressed base
# (5915301): `blocktri info`'s "PTX ... loaded in", alternating; then every kernel of the
# new build compiled alone (gpu_modules; call 1 ran the wrong executable) and gpu_cholesky;
# per-launch profiles of the n = 32 and 64 factor + solve (where #10's largest gaps are).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
ls -la $B $T >> "$OUT/device.txt"
for b in base serial new; do $B/blocktri-$b info > /dev/null 2>&1; done
for i in 1 2 3 4 5 6 7; do for b in base serial new; do
  echo "$b $i $($B/blocktri-$b info 2>&1 | grep -o 'PTX sm_[0-9]* loaded in [0-9.]* s')"
done; done | tee "$OUT/r/load.txt"
$B/blocktri-new info 2>&1 | head -4
timeout 300 $T/gpu_modules --include-ignored --test-threads=1 > "$OUT/r/gpu_modules.log" 2>&1
echo "gpu_modules rc=$? $(grep -E 'test result' "$OUT/r/gpu_modules.log" | tail -1)"
timeout 200 $T/gpu_cholesky --include-ignored > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
BLOCKTRI_PTX_ARCH=sm_80 $B/blocktri-new info 2>&1 | sed -n 3p
BLOCKTRI_PTX_ARCH=sm_70 $B/blocktri-new info 2>&1 | tail -2
$B/blocktri-new solve --generate 4096,16 2>&1 | tail -3
for g in 8192,32 4096,64; do
  $B/blocktri-new profile --generate $g --factor-solve > "$OUT/r/profile-$g.txt" 2>&1
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
