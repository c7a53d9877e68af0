#!/usr/bin/env bash
# Session 2026-12-03 (afternoon), call 1 (prediction.txt): base = a0f3da6, new = the panel
# solves loading L_ii's lower triangle only + the solve's own single-launch start
# (BLOCKTRI_SOLVE_DATAFLOW_PER_SM, default = the factor's). Alternating, two rounds; then
# the start swept on new; a per-launch profile; gpu_cholesky and sanitizers on new.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
sum() { echo "$1: $(grep -E 'blocktri-gpu \| (factor|solve|factor\+solve) \|' $OUT/r/$1/report.md | awk -F'|' '{printf "N=%s n=%s k=%s %s %s | ", $3, $4, $5, $6, $7}')"; }
s1() { timeout 200 $B/blocktri-$1 bench --full --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes ${4:-32,64} --nrhs ${5:-1,32} \
  --precision $2 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/$3 > /dev/null 2>&1; sum $3; }
for round in 1 2; do for v in base new; do s1 $v f64 f64-$v-$round; done; done
s1 base f32 f32-base-1; s1 new f32 f32-new-1
for per in 1 2 4 8; do BLOCKTRI_SOLVE_DATAFLOW_PER_SM=$per s1 new f64 sdf$per-2 32,64 1; done
for per in 8 16; do BLOCKTRI_SOLVE_DATAFLOW_PER_SM=$per s1 new f64 rows-sdf$per 8,16 1; done
s1 new f64 rows-default 8,16 1
for g in 4096,64 8192,32; do
  $B/blocktri-new profile --generate $g --factor-solve > "$OUT/r/profile-new-$g.txt" 2>&1
  BLOCKTRI_SOLVE_DATAFLOW_PER_SM=4 $B/blocktri-new profile --generate $g --factor-solve > "$OUT/r/profile-new4-$g.txt" 2>&1
  $B/blocktri-base profile --generate $g --factor-solve > "$OUT/r/profile-base-$g.txt" 2>&1
done
grep -hE "solve_|sum" $OUT/r/profile-*-4096,64.txt | head -30
timeout 280 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for c in sanitize_column_solves sanitize_cholesky_every_family; do for tool in memcheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/r/$c-$tool.log" 2>&1
  echo "$c $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/$c-$tool.log" | tr '\n' ' ')"
done; done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
