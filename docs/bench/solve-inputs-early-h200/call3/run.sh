#!/usr/bin/env bash
# Call 3: the panel backward solve reads y_i with the neighbours only in the single launch and at
# padded size 32 (at 64 the per-level launches read it inside the products, as in the base).
# GPU tests, sanitizers on the panel cases, profiles, the horizon grid at n = 32, 64 alternating
# with the base.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; W=/tmp/call3; mkdir -p $W
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
S="$OUT/summary.txt"
for t in gpu_cholesky; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$W/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$W/test-$t.log" | tail -1)" | tee -a $S; grep -E "FAILED|panicked" -A3 "$W/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_blocked_interlaced sanitize_cholesky_every_family; do for tool in memcheck racecheck synccheck; do
  [ $f = sanitize_cholesky_every_family ] && [ $tool = racecheck ] && continue
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$W/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$W/$f-$tool.log" | tr '\n' ' ')" | tee -a $S
done; done
for g in 8192,32 4096,64; do for v in blocktri-base blocktri; do
  timeout 40 $B/$v profile --generate $g --factor-solve --repeat 3 > "$W/profile-$v-${g/,/x}.txt" 2>&1
done; done
for round in 1 2; do for v in blocktri-base blocktri; do
  timeout 150 $B/$v bench --suites horizon --batches 1 --nblocks 512,4096,8192,16384 --block-sizes 32,64 --precision f64,f32 \
    --methods blocktri-gpu --runs 10 --out-dir "$W/bench-$v-$round" > "$W/bench-$v-$round.log" 2>&1
  echo "bench $v $round rc=$?" | tee -a $S
done; done
rm -rf $W/bench-*/*.svg $W/bench-*/report.json
tar -C $W -cJf $OUT/results.tar.xz .
date -u >> "$OUT/device.txt"
