#!/usr/bin/env bash
# Per-kernel (per-level) times of each kernel family, in one call:
#   bash scripts/gpu-profile.sh
set -u
source "$(dirname "$0")/gpu-env.sh"
b=.gpu/bin/blocktri
$b profile --generate 16384,16 --kernels rows --repeat 3 2>&1 | tee "$OUT/profile-16384-16.log" | head -20
$b profile --generate 4096,64 --kernels panel --repeat 3 > "$OUT/profile-4096-64.log" 2>&1
for k in rows panel generic; do for g in 64,16 16384,16 4096,32 4096,8; do
  echo "### $k $g $($b profile --generate $g --kernels $k --repeat 3 | tail -1)"
done; done 2>&1 | tee "$OUT/profile.log"
for p in f64 f32; do $b profile --generate 4096,32 --kernels rows --precision $p | tail -1; done
