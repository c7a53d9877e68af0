#!/usr/bin/env bash
# Out-of-core batches without a host copy of the right-hand sides (issue #12,
# docs/perf-notes.md entry 64): the GPU host-path tests (memcheck on the chunk tests),
# then `blocktri solve` of batches larger than a device-memory cap, the build before
# (blocktri-base, c3e9d1b) and this one alternating; the host's NUMA layout.
# Usage: [MEMCHECK=1] [BINS='a b'] [CASES='S,N,n_CAP ...'] OUT=... bash .gpub/run.sh [tests] [ab] [host]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests ab host}
if [[ " $steps " == *" host "* ]]; then
  (lscpu | grep -iE "numa|model name|socket"; free -g; cat /sys/kernel/mm/transparent_hugepage/enabled) > "$OUT/host.txt" 2>&1
  cat "$OUT/host.txt"
fi
if [[ " $steps " == *" tests "* ]]; then
  timeout 300 .gpub/tests/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
  echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
  if [ -n "${MEMCHECK:-}" ]; then
    timeout 240 compute-sanitizer --tool memcheck .gpub/tests/gpu_transfers --include-ignored chunk > "$OUT/memcheck-chunks.log" 2>&1
    echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck-chunks.log" | tr '\n' ' ')"
  fi
  for f in "$OUT"/*.log; do tail -c 60000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
if [[ " $steps " == *" ab "* ]]; then
for case in ${CASES:-256,16384,16_8G}; do
  set -- ${case/_/ }
  for bin in ${BINS:-blocktri-base blocktri blocktri-base blocktri}; do
    echo "== $bin solve --generate $1, cap $2"
    /usr/bin/time -f "peak RSS %M KB, wall %e s" env BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 200 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror|peak RSS"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
date -u >> "$OUT/device.txt"
