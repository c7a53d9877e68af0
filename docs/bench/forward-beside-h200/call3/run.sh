#!/usr/bin/env bash
# Call 3: the committed form. bin/blocktri (the interlaced rows factor in kernels of their
# own, factor_solve_rows*; the factor alone back to a823497's code), bin/blocktri-one (call 1's
# build: both in one kernel), bin/blocktri-old (a823497), alternating. GPU tests and
# sanitizers on bin/blocktri's tests.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky errors gpu_mixed; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$R/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$R/test-$t.log" | tail -1)" | tee -a $OUT/summary.txt; grep -E "FAILED|panicked" -A3 "$R/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_small sanitize_cholesky_large; do for tool in memcheck racecheck synccheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$R/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$R/$f-$tool.log" | tr '\n' ' ')" | tee -a $OUT/summary.txt
done; done
bin_of() { case $1 in old) echo $B/blocktri-old;; one) echo $B/blocktri-one;; *) echo $B/blocktri;; esac; }
for g in 16384,16 4096,16; do for v in old split; do
  timeout 40 $(bin_of $v) profile --generate $g --repeat 3 > "$R/profile-f-$v-${g/,/x}.txt" 2>&1
  timeout 40 $(bin_of $v) profile --generate $g --factor-solve --repeat 3 > "$R/profile-fs-$v-${g/,/x}.txt" 2>&1
  echo "profile $v $g rc=$?"
done; done
for round in 1 2; do for v in old one split; do for p in f64 f32; do
  timeout 100 $(bin_of $v) bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 8,12,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-$v-$p-$round" > "$R/bench-$v-$p-$round.log" 2>&1
  echo "$v $p $round rc=$?"
  grep -E '^horizon' "$R/bench-$v-$p-$round.log" | grep -v transfer | awk -v v=$v -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done; done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
