#!/usr/bin/env bash
# Per-kernel times of both kernel families plus a short comparison with the GPU peers,
# in one call:  bash scripts/gpu-profile.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
b=.gpu/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
$b profile --generate 16384,16 --kernels rows --repeat 3 2>&1 | tee "$OUT/profile-16384-16.log" | head -20
for k in rows generic; do for g in 64,16 16384,16 4096,32 4096,8; do
  echo "### $k $g $($b profile --generate $g --kernels $k --repeat 3 | tail -1)"
done; done 2>&1 | tee "$OUT/profile.log"
for p in f64 f32; do $b profile --generate 4096,32 --kernels rows --precision $p | tail -1; done
