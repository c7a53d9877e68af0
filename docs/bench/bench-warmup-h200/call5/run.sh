#!/usr/bin/env bash
# Session 2026-12-03 (late afternoon), call 5: the committed rule for the block solve
# (level 0 in up to 3 rounds of warps at padded size 4, 2 at 8, at most 64 nodes) against
# the single launch (BLOCKTRI_BLOCK_SOLVE_NODES=0), same binary, alternating, three rounds;
# GPU tests; the sanitizers on the block kernel.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 100 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 32,64,128,256 --block-sizes 4,8 --nrhs 1 \
  --precision $1 --methods blocktri-gpu --runs 15 --out-dir $OUT/r/$2 > /dev/null 2>&1; echo "$2 rc=$?"; }
for round in 1 2 3; do for p in f64 f32; do
  BLOCKTRI_BLOCK_SOLVE_NODES=0 s1 $p $p-off-$round; s1 $p $p-on-$round
done; done
for p in f64 f32; do for r in off on; do echo "== $p $r (N, n, phase: medians of the three rounds)"
  for N in 32 64 128 256; do for n in 4 8; do for ph in solve factor+solve; do
    echo "$N $n $ph $(for k in 1 2 3; do grep -F "horizon,blocktri-gpu,$p,1,$N,$n,1,$ph," $OUT/r/$p-$r-$k/rows.csv | cut -d, -f9 | cut -c1-6; done | tr '\n' ' ')"
  done; done; done; done; done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_rows_block_solve > "$OUT/r/block-$tool.log" 2>&1
  echo "block $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/block-$tool.log" | tr '\n' ' ')"
done
timeout 280 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/gpu_cholesky.log" | head -12
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
