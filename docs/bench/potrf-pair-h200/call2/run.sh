#!/usr/bin/env bash
# Session 2026-12-02 night, call 2: the pair kernel with one call site of the tile factor
# (a loop over the two diagonal tiles, not peeled), f64 only, its products on the sm_90
# 16 x 8 DMMA tiles (bin/blocktri), against the same with m8n8k4 products (bin/blocktri-loop)
# and call 1's form (bin/blocktri-pair1, two inlined factors); ptxas -v of the first form (two inlined
# factors, pair-kernels.sm_90.ptx) against this one (pair-loop.sm_90.ptx); the tests and the
# sanitizers (racecheck with a longer limit); the same A/B as call 1; a profile.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; D=docs/bench/potrf-pair-h200
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
PTXAS=ptxas; command -v $PTXAS >/dev/null || PTXAS=/usr/local/cuda/bin/ptxas
for f in pair-kernels pair-loop pair-16; do
  $PTXAS -arch=sm_90 -v $D/$f.sm_90.ptx -o /tmp/$f.cubin 2>&1 | grep -A2 -E "Compiling entry function 'tiled_potrf" | grep -vE "^--" | sed "s/^/$f: /" | tee -a "$OUT/ptxas.txt"
  cuobjdump -sass /tmp/$f.cubin 2>/dev/null | awk '/Function : /{name=$3} /\/\*[0-9a-f]{4,}\*\//{n[name]++} END{for (k in n) print "'$f' sass instructions", k, n[k]}' | tee -a "$OUT/ptxas.txt"
done
timeout 150 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 170 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
# Modes: off (the column steps, BLOCKTRI_POTRF_PAIR=off), on (this build: one call site of
# the tile factor, 16 x 8 DMMA products), loop (one call site, m8n8k4 products), pair1
# (call 1's form).
for round in 1 2; do
  for mode in off on loop pair1; do
    BIN=$B/blocktri; unset BLOCKTRI_POTRF_PAIR
    case $mode in off) export BLOCKTRI_POTRF_PAIR=off;; loop) BIN=$B/blocktri-loop;; pair1) BIN=$B/blocktri-pair1;; esac
    if [ $mode = off ] || [ $mode = on ]; then
      timeout 60 $BIN bench --full --suites fp64-sweep --block-sizes 100,128 --precision f64 --methods blocktri-gpu --runs 7 \
        --out-dir "$OUT/r/ab-$mode-$round-sweep" > /dev/null 2>&1
    fi
    timeout 60 $BIN bench --full --suites horizon --batches 1 --nblocks 64,512 --block-sizes 128 --precision f64 \
      --kernels tiled --methods blocktri-gpu --runs 7 --out-dir "$OUT/r/ab-$mode-$round-horizon" > /dev/null 2>&1
    echo "== $mode round $round"
    grep -hsE "blocktri-gpu[a-z-]* \| (factor|solve|factor\+solve) \|" "$OUT/r/ab-$mode-$round-sweep/report.md" "$OUT/r/ab-$mode-$round-horizon/report.md" | sed "s/^/$mode $round /" | tee -a "$OUT/ab.txt" | cut -c1-100
  done
done
# (As run, a stale copy of call 1's loop followed here: a syntax error stopped the script
# after the A/B loop, before the profile; ptxas.txt came back empty. The PTX extracts it
# read were not kept.)
unset BLOCKTRI_POTRF_PAIR
timeout 40 $B/blocktri profile --generate 2048,128 --factor-solve --repeat 3 > "$OUT/profile-fs-2048x128.txt" 2>&1
echo "profile rc=$?"; grep -E "potrf|sum of" "$OUT/profile-fs-2048x128.txt" | head -14
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
