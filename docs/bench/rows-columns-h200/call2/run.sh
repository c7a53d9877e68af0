#!/usr/bin/env bash
# Call 2: thresholds set from call 1 (column solves from k = 5 at padded size 8, from 3 at 16).
# The rows factor's interlacing cap (BLOCKTRI_ROWS_INTERLACE_MAX = 0 / 4 (default) / 1000);
# staging the couplings at padded sizes 8 / 16 (BLOCKTRI_PANEL_COLUMNS_STAGED = 8 / 32 (default)
# / 1000); f32 against column-by-column; the peers at k = 1, 4, 16, 32; the segment path again.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
G="--suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --methods blocktri-gpu --runs 10"
for v in 0 4 1000; do
  BLOCKTRI_ROWS_INTERLACE_MAX=$v timeout 100 $B/blocktri bench $G --nrhs 3,4,5,8,32 --out-dir "$OUT/i-$v" > "$OUT/i-$v.txt" 2>&1; echo "interlace max $v rc=$?"
done
for v in 8 32 1000; do
  BLOCKTRI_PANEL_COLUMNS_STAGED=$v timeout 100 $B/blocktri bench $G --nrhs 8,16,32 --out-dir "$OUT/s-$v" > "$OUT/s-$v.txt" 2>&1; echo "staged from $v rc=$?"
done
for v in 3 1000000; do
  BLOCKTRI_ROWS_COLUMNS_FROM=$v timeout 100 $B/blocktri bench $G --nrhs 1,3,4,8,32 --precision f32 --out-dir "$OUT/f-$v" > "$OUT/f-$v.txt" 2>&1; echo "f32 columns from $v rc=$?"
done
timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --nrhs 1,4,16,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/peers" > "$OUT/peers.txt" 2>&1; echo "peers rc=$?"
grep -E " solve k=| solve  " "$OUT/peers.txt" | head -80
for g in 1,32768,64 1,262144,16; do
  for run in 1 2; do
    for bin in blocktri blocktri-base; do
      echo "== $bin solve --generate $g, cap 512M, run $run" >> "$OUT/segments.txt"
      BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/$bin solve --generate $g 2>&1 | grep -E "factor\+solve:|rror" >> "$OUT/segments.txt"
    done
  done
  echo "== blocktri solve --generate $g, cap 512M, BLOCKTRI_ROWS_COLUMNS_FROM=1000000" >> "$OUT/segments.txt"
  BLOCKTRI_ROWS_COLUMNS_FROM=1000000 BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate $g 2>&1 | grep -E "factor\+solve:|rror" >> "$OUT/segments.txt"
done
cat "$OUT/segments.txt"
(cd $OUT && tar -cJf bench.tar.xz i-* s-* f-* peers && rm -rf i-0 i-4 i-1000 s-8 s-32 s-1000 f-3 f-1000000 peers)
date -u >> "$OUT/device.txt"
