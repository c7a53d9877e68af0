#!/usr/bin/env bash
# Page-locked right-hand sides scanned for non-finite values by threads of their own,
# after their DMA is enqueued, and the segment path's batches not scanned at all (the
# caller's b checked once before them) (issue #12): the GPU host-path tests, then
# `blocktri solve` of one chain larger than a device-memory cap (the segment path, whose
# batches are page-locked): the previous build (blocktri-base), the scan on threads of
# its own alone (blocktri-scan) and both changes (blocktri) alternating, two rounds;
# then a trace of each on the 1G case.
# Usage: OUT=... bash .gpub/run.sh [tests] [ab] [trace]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests ab trace}
if [[ " $steps " == *" tests "* ]]; then
for t in gpu_transfers recovery errors threads; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  tail -c 60000 "$OUT/test-$t.log" > "$OUT/t" && mv "$OUT/t" "$OUT/test-$t.log"
done
fi
if [[ " $steps " == *" ab "* ]]; then
for case in "1,262144,16 256M" "1,1048576,16 1G" "1,32768,64 512M"; do
  set -- $case
  for bin in blocktri-base blocktri-scan blocktri blocktri-base blocktri-scan blocktri; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
if [[ " $steps " == *" trace "* ]]; then
for bin in blocktri-base blocktri-scan blocktri; do
  BLOCKTRI_DEVICE_MEMORY_LIMIT=1G BLOCKTRI_TRACE=1 timeout 100 $B/$bin solve --generate 1,1048576,16 > "$OUT/trace-$bin-1048576-16.txt" 2>&1
  for what in "upload rhs and checks" "upload rhs \\(enqueued" "segments: rhs checks" "launch, check" "factor\\+solve a batch"; do
    echo "$bin: $(grep -E "$what" "$OUT/trace-$bin-1048576-16.txt" | awk -v w="$what" '{s+=$(NF-1)} END {printf "%s: %.0f ms in %d", w, s, NR}')"
  done
done
fi
date -u >> "$OUT/device.txt"
