#!/usr/bin/env bash
# Entry 97, call 1: correctness of the 128-column steps on the GPU. gpu_cholesky and errors
# with the default dispatch (the 128-column steps on the crowded levels of n >= 256), then
# gpu_cholesky with them forced on every level of every n >= 64
# (BLOCKTRI_PAIR_STEPS_MIN_BLOCK=64 BLOCKTRI_PAIR_STEPS_NODES=1 BLOCKTRI_WIDE_WAVES=0), and
# compute-sanitizer memcheck, synccheck and racecheck on sanitize_cholesky_tiled forced the
# same way (n = 150, 300, 450: a step then a lone partial tile, two steps and a lone tile,
# four steps).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
FORCE="BLOCKTRI_PAIR_STEPS_MIN_BLOCK=64 BLOCKTRI_PAIR_STEPS_NODES=1 BLOCKTRI_WIDE_WAVES=0"
for t in gpu_cholesky errors; do
  timeout 200 $T/$t --test-threads=1 > "$OUT/r/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/r/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$t.log" | head -12
done
env $FORCE timeout 200 $T/gpu_cholesky --test-threads=1 > "$OUT/r/test-gpu_cholesky-forced.log" 2>&1
echo "gpu_cholesky forced rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-forced.log" | tail -1)"
grep -E "FAILED|panicked" -A3 "$OUT/r/test-gpu_cholesky-forced.log" | head -12
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  env $FORCE timeout 150 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-pairs-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (128-column steps forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-pairs-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
