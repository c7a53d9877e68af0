#!/usr/bin/env bash
# Session 2026-12-03 (evening), call 1: the solve's top levels in one block per system
# (`level::solve_rows_block`): the threshold swept (0 = today's single launch), ours alone,
# n = 8 and 16, f64 and f32; GPU tests; the sanitizers on the new kernel.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 200 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16 --nrhs 1 \
  --precision $1 --methods blocktri-gpu --runs 9 --out-dir $OUT/r/$2 > /dev/null 2>&1; echo "$2 rc=$?"; }
for round in 1 2; do for nodes in 0 16 64 256 1024; do BLOCKTRI_BLOCK_SOLVE_NODES=$nodes s1 f64 f64-b$nodes-$round; done; done
for nodes in 0 64; do BLOCKTRI_BLOCK_SOLVE_NODES=$nodes s1 f32 f32-b$nodes; done
for r in f64-b0-1 f64-b64-1 f64-b0-2 f64-b64-2; do echo "== $r"; grep -E "^\| 1 \|" $OUT/r/$r/report.md | grep -E "\| (solve|factor\+solve) \|" | cut -c1-60; done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_rows_block_solve > "$OUT/r/block-$tool.log" 2>&1
  echo "block $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/block-$tool.log" | tr '\n' ' ')"
done
timeout 280 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
