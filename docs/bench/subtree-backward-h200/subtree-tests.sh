#!/usr/bin/env bash
# Subtree backward solve (perf-notes entry 71): ptxas, GPU tests, sanitizers. OUT must be set.
set -u; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for f in .gpub/ptx/*.ptx; do echo "$(basename $f .ptx) $(ptxas -arch=sm_90 -v $f -o /dev/null 2>&1 | grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')"; done
for t in gpu_cholesky gpu_transfers errors; do
  timeout 400 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tool in memcheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_large sanitize_segments_on_the_edges sanitize_cholesky_small > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for f in "$OUT"/*.log; do tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
date -u >> "$OUT/device.txt"
