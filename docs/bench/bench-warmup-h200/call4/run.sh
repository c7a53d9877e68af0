#!/usr/bin/env bash
# Session 2026-12-03 (late afternoon), call 4: the block solve for N = 128 and 256 (up to
# 128 nodes on level 0, up to 8 rounds of warps) against the default, same binary as call 3,
# alternating, three rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 100 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 128,256 --block-sizes 4,8 --nrhs 1 \
  --precision $1 --methods blocktri-gpu --runs 15 --out-dir $OUT/r/$2 > /dev/null 2>&1; echo "$2 rc=$?"; }
for round in 1 2 3; do for p in f64 f32; do
  s1 $p $p-def-$round; BLOCKTRI_BLOCK_SOLVE_NODES=128 BLOCKTRI_BLOCK_SOLVE_ROUNDS=8 s1 $p $p-long-$round
done; done
for p in f64 f32; do for r in def long; do echo "== $p $r (N, n, phase: medians of the three rounds)"
  for N in 128 256; do for n in 4 8; do for ph in solve factor+solve; do
    echo "$N $n $ph $(for k in 1 2 3; do grep -F "horizon,blocktri-gpu,$p,1,$N,$n,1,$ph," $OUT/r/$p-$r-$k/rows.csv | cut -d, -f9 | cut -c1-6; done | tr '\n' ' ')"
  done; done; done; done; done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
