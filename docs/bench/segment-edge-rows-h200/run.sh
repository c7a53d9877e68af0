#!/usr/bin/env bash
# The segment path's pass 1 downloading only the two block rows of each segment that it
# reads, instead of the whole k + 2n-column solution (issue #12): the GPU host-path tests,
# then `blocktri solve` of one chain larger than a device-memory cap, first and second
# call: the build before it (blocktri-prev: pass 2 in pass 1's matrix buffers,
# docs/bench/segment-shared-matrices-h200) and this one alternating, two rounds; then a trace.
# Usage: OUT=... bash .gpub/run.sh [tests] [ab] [trace]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests ab trace}
if [[ " $steps " == *" tests "* ]]; then
for t in gpu_transfers; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  tail -c 60000 "$OUT/test-$t.log" > "$OUT/t" && mv "$OUT/t" "$OUT/test-$t.log"
done
fi
if [[ " $steps " == *" ab "* ]]; then
for case in "1,1048576,16 1G" "1,32768,64 512M"; do
  set -- $case
  for bin in blocktri-prev blocktri blocktri-prev blocktri; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
if [[ " $steps " == *" trace "* ]]; then
for bin in blocktri-prev blocktri; do
  BLOCKTRI_DEVICE_MEMORY_LIMIT=1G BLOCKTRI_TRACE=1 timeout 100 $B/$bin solve --generate 1,1048576,16 > "$OUT/trace-$bin-1048576-16.txt" 2>&1
  grep -E "factor\+solve: segments" "$OUT/trace-$bin-1048576-16.txt" | sed "s/^/$bin: /"
  echo "$bin: $(grep -E 'download' "$OUT/trace-$bin-1048576-16.txt" | awk '{s+=$(NF-1)} END {printf "downloads %.0f ms in %d", s, NR}')"
done
fi
date -u >> "$OUT/device.txt"
