#!/usr/bin/env bash
# Session 2026-12-03, call 1: the blocked node body inlined into its kernels (prediction.txt).
# base = 523309a's kernels, inl = body inlined everywhere, inlpl = per-level kernels only.
# f64 S = 1 factor / factor + solve, alternating, two rounds; f32 one round; a per-launch
# profile of inl; gpu_cholesky and the every-family sanitizers on inl.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
sum() { echo "$1: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/r/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s | ", $2, $3, $4, $6, $7}')"; }
s1() { timeout 150 $B/blocktri-$1 bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 \
  --precision $2 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/$3 > /dev/null 2>&1; sum $3; }
for round in 1 2; do for v in base inl inlpl; do s1 $v f64 f64-$v-$round; done; done
for v in base inl; do s1 $v f32 f32-$v-1; done
for g in 4096,64 8192,32; do
  $B/blocktri-inl profile --generate $g --factor-solve > "$OUT/r/profile-inl-$g.txt" 2>&1
  $B/blocktri-base profile --generate $g --factor-solve > "$OUT/r/profile-base-$g.txt" 2>&1
done
grep -hE "blocked" $OUT/r/profile-*-4096,64.txt | head -12
timeout 120 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_cholesky_every_family > "$OUT/r/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
