#!/usr/bin/env bash
# Session 2026-12-03 (late afternoon), call 3: the block solve with two rounds of warps on
# level 0 (BLOCKTRI_BLOCK_SOLVE_ROUNDS=2) against one (today's rule) in the same binary,
# alternating, three rounds, f64 and f32; the sanitizers on the block kernel with two rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 100 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 32,64,128 --block-sizes 4,8 --nrhs 1 \
  --precision $1 --methods blocktri-gpu --runs 15 --out-dir $OUT/r/$2 > /dev/null 2>&1; echo "$2 rc=$?"; }
for round in 1 2 3; do for p in f64 f32; do
  BLOCKTRI_BLOCK_SOLVE_ROUNDS=1 s1 $p $p-r1-$round; BLOCKTRI_BLOCK_SOLVE_ROUNDS=2 s1 $p $p-r2-$round
done; done
for p in f64 f32; do for r in r1 r2; do echo "== $p $r (N, n, phase: medians of the three rounds)"
  for N in 32 64 128; do for n in 4 8; do for ph in solve factor+solve; do
    echo "$N $n $ph $(for k in 1 2 3; do grep -F "horizon,blocktri-gpu,$p,1,$N,$n,1,$ph," $OUT/r/$p-$r-$k/rows.csv | cut -d, -f9 | cut -c1-6; done | tr '\n' ' ')"
  done; done; done; done; done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  BLOCKTRI_BLOCK_SOLVE_ROUNDS=2 timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_rows_block_solve > "$OUT/r/block2-$tool.log" 2>&1
  echo "block (2 rounds) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/block2-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
