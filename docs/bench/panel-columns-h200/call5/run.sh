#!/usr/bin/env bash
# Call 5: the committed default (staging from a group width of 32): the n = 64, k = 16 rows
# of the horizon grid beside the peers again, and k = 32 at n = 32 / 64, N = 4096.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 64 --nrhs 16,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/peers" > "$OUT/peers.txt" 2>&1; echo "peers rc=$?"
grep -E " solve k=" "$OUT/peers.txt"
(cd $OUT && tar -cJf bench.tar.xz peers && rm -rf peers)
date -u >> "$OUT/device.txt"
