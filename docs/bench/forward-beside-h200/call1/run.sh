#!/usr/bin/env bash
# Call 1: the interlaced forward substitution beside the coupling solves (bin/blocktri) against
# the previous commit a823497 (bin/blocktri-old), same machine, alternating. GPU tests and
# sanitizers on the new build; profiles and the horizon bench at n = 8, 12, 16.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky errors; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$R/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$R/test-$t.log" | tail -1)" | tee -a $OUT/summary.txt; grep -E "FAILED|panicked" -A3 "$R/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_small sanitize_cholesky_large; do for tool in memcheck racecheck synccheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$R/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$R/$f-$tool.log" | tr '\n' ' ')" | tee -a $OUT/summary.txt
done; done
for g in 16384,16 4096,16 16384,8; do for v in old new; do
  bin=$B/blocktri; [ $v = old ] && bin=$B/blocktri-old
  timeout 40 $bin profile --generate $g --factor-solve --repeat 3 > "$R/profile-fs-$v-${g/,/x}.txt" 2>&1
  echo "profile $v $g rc=$?"
done; done
for round in 1 2; do for v in old new; do for p in f64 f32; do
  bin=$B/blocktri; [ $v = old ] && bin=$B/blocktri-old
  timeout 100 $bin bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,12,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-$v-$p-$round" > "$R/bench-$v-$p-$round.log" 2>&1
  echo "$v $p $round rc=$?"
  grep -E '^horizon' "$R/bench-$v-$p-$round.log" | grep -v transfer | awk -v v=$v -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done; done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
