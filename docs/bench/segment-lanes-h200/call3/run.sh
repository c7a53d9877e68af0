#!/usr/bin/env bash
# Call 3: pass 2's scatter on threads of its own (blocktri) against call 2's binary
# (blocktri-prev), alternating; BLOCKTRI_TRACE at 1G, N = 1048576, n = 16.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
for r in 1 2 3; do
  for c in "512M 1,32768,64" "512M 1,262144,16" "1G 1,1048576,16"; do
    set -- $c
    for bin in blocktri blocktri-prev; do
      echo "== $bin solve --generate $2, cap $1, run $r" >> "$OUT/segments.txt"
      BLOCKTRI_DEVICE_MEMORY_LIMIT=$1 timeout 90 $B/$bin solve --generate $2 2>&1 | grep -E "factor\+solve:|rror" >> "$OUT/segments.txt"
    done
  done
done
cat "$OUT/segments.txt"
echo "== solve --generate 1,1048576,16, cap 1G, BLOCKTRI_TRACE=1" >> "$OUT/trace.txt"
BLOCKTRI_TRACE=1 BLOCKTRI_DEVICE_MEMORY_LIMIT=1G timeout 90 $B/blocktri solve --generate 1,1048576,16 >> "$OUT/trace.txt" 2>&1
grep -E "^==|factor\+solve: segments|factor\+solve: [0-9]" "$OUT/trace.txt"
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
