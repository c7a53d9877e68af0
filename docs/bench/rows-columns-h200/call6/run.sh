#!/usr/bin/env bash
# Call 6: the other GPU test executables on the committed form (b387221), one summary
# line each (gpu_cholesky, gpu_sanitize, gpu_transfers and errors ran in calls 1, 3, 4).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in $(ls $T); do
  timeout 150 $T/$t --include-ignored --test-threads=4 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)" | tee -a "$OUT/summary.txt"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls test-*.log) && rm -f $OUT/test-*.log
date -u >> "$OUT/device.txt"
