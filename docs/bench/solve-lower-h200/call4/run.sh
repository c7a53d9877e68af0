#!/usr/bin/env bash
# Session 2026-12-03 (afternoon), call 4: is n = 8 at small N slower than in entry 90?
# old = d8d8405 (entry 90's build, whose #11 grid read factor + solve 0.45x the best peer at
# n = 8), fin = this session's committed form; rows sizes only, alternating, three rounds.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for r in 1 2 3; do for v in old fin; do
  timeout 100 $B/blocktri-$v bench --full --suites horizon --batches 1 --nblocks 64,512,4096 --block-sizes 8,16 --nrhs 1 \
    --precision f64 --methods blocktri-gpu --runs 10 --out-dir $OUT/r/$v-$r > /dev/null 2>&1; echo "$v-$r rc=$?"
done; done
for r in 1 2; do for v in fin b8; do
  timeout 150 $B/blocktri-$v bench --full --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --nrhs 1,32 \
    --precision f64 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/p-$v-$r > /dev/null 2>&1; echo "p-$v-$r rc=$?"
done; done
timeout 100 $B/blocktri-b8 bench --full --suites horizon --batches 1 --nblocks 4096 --block-sizes 32,64 --nrhs 1 \
  --precision f32 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/p-b8-f32 > /dev/null 2>&1; echo "p-b8-f32 rc=$?"
timeout 100 $B/blocktri-fin bench --full --suites horizon --batches 1 --nblocks 4096 --block-sizes 32,64 --nrhs 1 \
  --precision f32 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/p-fin-f32 > /dev/null 2>&1; echo "p-fin-f32 rc=$?"
$B/blocktri-b8 profile --generate 4096,64 --factor-solve > $OUT/r/profile-b8.txt 2>&1
$B/blocktri-fin profile --generate 4096,64 --factor-solve > $OUT/r/profile-fin.txt 2>&1
grep -h backward $OUT/r/profile-*.txt
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
