#!/usr/bin/env bash
# The segment path's pass 1 with its coupling columns formed on the device and only the
# rows it reads downloaded (issue #12, docs/perf-notes.md entry 62): the GPU host-path
# tests (and memcheck on the segment test), then `blocktri solve` of one chain larger than
# a device-memory cap, first and second call: the build before it (blocktri-base, bb3b135)
# and this one alternating, two rounds; then a trace of each.
# Usage: [MEMCHECK=1] [BINS='a b'] [TRACES='1,N,n_CAP ...'] [TRACE_BINS='a b'] OUT=... bash .gpub/run.sh [tests] [ab] [trace]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests ab trace}
if [[ " $steps " == *" tests "* ]]; then
  timeout 300 .gpub/tests/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
  echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
  if [ -n "${MEMCHECK:-}" ]; then
    timeout 240 compute-sanitizer --tool memcheck .gpub/tests/gpu_transfers --include-ignored one_chain_larger > "$OUT/memcheck-segments.log" 2>&1
    echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck-segments.log" | tr '\n' ' ')"
  fi
  for f in "$OUT"/*.log; do tail -c 60000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
if [[ " $steps " == *" ab "* ]]; then
for case in "1,1048576,16 1G" "1,32768,64 512M" "1,262144,16 256M"; do
  set -- $case
  for bin in ${BINS:-blocktri-base blocktri blocktri-base blocktri}; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
if [[ " $steps " == *" trace "* ]]; then
for case in ${TRACES:-1,1048576,16_1G}; do
  set -- ${case/_/ }
  for bin in ${TRACE_BINS:-blocktri-base blocktri}; do
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 BLOCKTRI_TRACE=1 timeout 100 $B/$bin solve --generate $1 > "$OUT/trace-$bin-${1//,/-}.txt" 2>&1
    grep -E "factor\+solve: segments" "$OUT/trace-$bin-${1//,/-}.txt" | sed "s/^/$bin: /"
  done
done
fi
date -u >> "$OUT/device.txt"
