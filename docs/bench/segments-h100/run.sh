#!/usr/bin/env bash
# One chain larger than the (capped) device memory in segments (issue #12): the GPU
# tests, then `blocktri solve` host to host with and without a device-memory cap.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g | head -2; date -u) | tee "$OUT/device.txt"
for t in ${TESTS:-gpu_transfers recovery errors}; do
  echo "== $t"; timeout 400 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1; echo "rc=$?"; grep -E "test result|FAILED|panicked" "$OUT/test-$t.log" | head -5
done
for case in "1,262144,16 256M" "1,1048576,16 1G" "1,32768,64 512M" "1,4096,256 1G" "1,1024,1024 2G"; do
  set -- $case
  for limit in none $2; do
    echo "== solve --generate $1, device memory limit $limit"
    if [ $limit = none ]; then timeout 200 $B/blocktri solve --generate $1 2>&1
    else BLOCKTRI_DEVICE_MEMORY_LIMIT=$limit timeout 200 $B/blocktri solve --generate $1 2>&1; fi | grep -vE "^ *$" | head -40
  done
done > "$OUT/solve.txt" 2>&1
grep -E "^==|factor\+solve:|residual|rror" "$OUT/solve.txt"
BLOCKTRI_DEVICE_MEMORY_LIMIT=256M BLOCKTRI_TRACE=1 timeout 200 $B/blocktri solve --generate 1,262144,16 > "$OUT/trace-262144-16.txt" 2>&1
tail -30 "$OUT/trace-262144-16.txt"
