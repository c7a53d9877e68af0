#!/usr/bin/env bash
# Session 2026-12-02 night, call 1: the two-tile diagonal block in one launch
# (tiled_potrf_pair, entry 102): gpu_cholesky's tiled cases (with the new two-tile failure
# cases), memcheck / racecheck / synccheck on sanitize_cholesky_tiled (two-tile cases added);
# A/B in one binary (BLOCKTRI_POTRF_PAIR=off against the default), alternating, two rounds;
# the bench report's new columns (seq %, the table against the fastest peer) on real rows;
# an event-timed profile of n = 128, N = 2048 with the pair.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
$B/blocktri info 2>&1 | grep -iE "ptx|device" | head -5
timeout 150 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  timeout 60 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do
  for mode in off on; do
    if [ $mode = off ]; then export BLOCKTRI_POTRF_PAIR=off; else unset BLOCKTRI_POTRF_PAIR; fi
    timeout 60 $B/blocktri bench --full --suites fp64-sweep --block-sizes 100,128 --precision f64 --methods blocktri-gpu --runs 7 \
      --out-dir "$OUT/r/ab-$mode-$round-sweep" > /dev/null 2>&1
    timeout 60 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512 --block-sizes 128 --precision f64,f32 \
      --kernels tiled --methods blocktri-gpu --runs 7 --out-dir "$OUT/r/ab-$mode-$round-horizon" > /dev/null 2>&1
    echo "== $mode round $round"
    grep -hE "blocktri-gpu \| (factor|solve|factor\+solve) \|" "$OUT/r/ab-$mode-$round-sweep/report.md" "$OUT/r/ab-$mode-$round-horizon/report.md" | tee -a "$OUT/ab.txt" | cut -c1-160
  done
done
unset BLOCKTRI_POTRF_PAIR
timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 --methods blocktri-gpu,vendor-schur --runs 3 \
  --out-dir "$OUT/report-check" > "$OUT/report-check.log" 2>&1
echo "report check rc=$?"; cat "$OUT/report-check/report.md" | head -60
timeout 40 $B/blocktri profile --generate 2048,128 --factor-solve --repeat 3 > "$OUT/profile-fs-2048x128.txt" 2>&1
echo "profile rc=$?"; grep -E "potrf|sum of" "$OUT/profile-fs-2048x128.txt" | head -20
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
