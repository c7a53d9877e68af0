#!/usr/bin/env bash
# Call 1: the solves' vector loads issued with the factor tiles' (prediction.txt): GPU tests,
# sanitizers on the small and every-family cases, per-level profiles of factor + solve at
# n = 16 and 64 for both builds, then the horizon grid (S = 1) alternating with the base.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers; do
  timeout 200 $T/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_small sanitize_cholesky_every_family; do for tool in memcheck racecheck synccheck; do
  timeout 120 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$OUT/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$f-$tool.log" | tr '\n' ' ')"
done; done
for g in 16384,16 4096,16 4096,64; do for v in blocktri-base blocktri; do
  timeout 40 $B/$v profile --generate $g --factor-solve --repeat 3 > "$OUT/profile-$v-${g/,/x}.txt" 2>&1
  echo "profile $v $g rc=$?"
done; done
for round in 1 2; do for v in blocktri-base blocktri; do
  timeout 100 $B/$v bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16,32,64 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/bench-$v-$round" > "$OUT/bench-$v-$round.log" 2>&1
  echo "$v $round rc=$?"
  grep -E '^horizon' "$OUT/bench-$v-$round.log" | grep -v transfer | awk -v v=$v -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
done; done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/bench-*/report.json
date -u >> "$OUT/device.txt"
