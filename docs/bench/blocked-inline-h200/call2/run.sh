#!/usr/bin/env bash
# Session 2026-12-03, call 2: the many-column solves' node bodies inlined (prediction.txt).
# base = call 1's inl (the blocked body inlined), new = base + the column bodies inlined
# (and the blocked body inlined by its attribute, the committed form). Solves with k = 8 and
# 32 columns, alternating, two rounds; gpu_cholesky and the sanitizers on new.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
sum() { echo "$1: $(grep -E 'blocktri-gpu \| (factor|solve|factor\+solve) \|' $OUT/r/$1/report.md | awk -F'|' '{printf "N=%s n=%s k=%s %s %s | ", $3, $4, $5, $6, $7}')"; }
s1() { timeout 200 $B/blocktri-$1 bench --full --suites horizon --batches 1 --nblocks 512,4096 --block-sizes 8,16,32,64 --nrhs 8,32 \
  --precision $2 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/$3 > /dev/null 2>&1; sum $3; }
for round in 1 2; do for v in base new; do s1 $v f64 f64-$v-$round; done; done
for v in base new; do s1 $v f32 f32-$v-1; done
head -30 $OUT/r/f64-new-1/report.md | grep -E "^\|" | head -3
timeout 250 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for c in sanitize_column_solves sanitize_cholesky_blocked_interlaced; do for tool in memcheck synccheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/r/$c-$tool.log" 2>&1
  echo "$c $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/$c-$tool.log" | tr '\n' ' ')"
done; done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
