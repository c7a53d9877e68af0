#!/usr/bin/env bash
# Call 3: base (87798b3) against the committed form (the DMMA products in the single launch only, the per-level launches on the FMA loop as before), f64, S = 1, n = 16 (and
# n = 13, padded to 16), N = 512 / 4096 / 16384, three alternating rounds of 20 runs; the
# single-launch kernel's profile at N = 4096 and 16384, three times each.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for round in 1 2 3; do
  for v in blocktri-base blocktri; do
    timeout 100 $B/$v bench --full --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 13,16 --precision f64 --methods blocktri-gpu --runs 20 --out-dir $OUT/b-$v-$round > /dev/null 2>&1
  done
done
for v in blocktri-base blocktri; do for g in 4096,16 16384,16; do for i in 1 2 3; do
  timeout 60 $B/$v profile --generate $g --repeat 3 > "$OUT/p.txt" 2>&1
  echo "$v $g $i: $(grep -E '^factor_rows' $OUT/p.txt | awk '{printf "%s:%s ", $2, $NF}')"
done; done; done
for t in gpu_cholesky; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_small" "synccheck sanitize_cholesky_small" "racecheck sanitize_cholesky_small"; do set -- $tc
  timeout 200 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d b-*) && rm -rf $OUT/b-* $OUT/p.txt
date -u >> "$OUT/device.txt"
