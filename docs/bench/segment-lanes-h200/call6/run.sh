#!/usr/bin/env bash
# Call 6: every other GPU test executable on the committed form (make_room is on every plan's
# allocation path; the partner now also serves the segment path).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests; export BLOCKTRI_BIN=$PWD/.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in $(ls $T); do
  timeout 150 $T/$t --include-ignored --test-threads=4 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -8
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
