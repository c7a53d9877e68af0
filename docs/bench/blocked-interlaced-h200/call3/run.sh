#!/usr/bin/env bash
# Call 3: where a factor + solve call's time goes with the interlaced blocked factor
# (`blocktri profile --factor-solve`, new) against a factor, then a solve (`profile`),
# f64, N = 4096 n = 64 and N = 8192 n = 32; the GPU tests with the new profile test.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for g in 4096,64 8192,32; do
  timeout 60 $B/blocktri profile --generate $g --repeat 3 > "$OUT/profile-$g.txt" 2>&1
  timeout 60 $B/blocktri profile --generate $g --repeat 3 --factor-solve > "$OUT/profile-factor-solve-$g.txt" 2>&1
  echo "$g: $(tail -1 $OUT/profile-$g.txt) | factor-solve: $(tail -1 $OUT/profile-factor-solve-$g.txt)"
done
for t in gpu_cholesky; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls profile-*.txt test-*.log)
date -u >> "$OUT/device.txt"
