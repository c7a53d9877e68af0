#!/usr/bin/env bash
# Call 1: GPU tests; sanitizers on the column solves (rows sizes new) and the segment path
# (edge columns now honoured by the column kernels); the segment path at n = 64 / 32 / 16
# under a 512M cap, new binary against the base (131358a); the rows sizes' solves with the
# column kernels (default, from k = 3) against column-by-column (BLOCKTRI_ROWS_COLUMNS_FROM=1000000).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers errors; do
  timeout 150 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for g in 1,32768,64 1,131072,32 1,262144,16; do
  for bin in blocktri blocktri-base; do
    echo "== $bin solve --generate $g, cap 512M" >> "$OUT/segments.txt"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/$bin solve --generate $g 2>&1 | grep -E "factor\+solve:|residual|rror" >> "$OUT/segments.txt"
  done
done
cat "$OUT/segments.txt"
for v in 3 1000000; do
  BLOCKTRI_ROWS_COLUMNS_FROM=$v timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 \
    --nrhs 1,2,3,4,8,32 --methods blocktri-gpu --runs 10 --out-dir "$OUT/c-$v" > "$OUT/c-$v.txt" 2>&1; echo "columns from $v rc=$?"
  grep -E " solve k=" "$OUT/c-$v.txt" | head -40
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  for t in sanitize_column_solves sanitize_segments_on_the_edges; do
    timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $t > "$OUT/$tool-$t.log" 2>&1
    echo "$tool $t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-$t.log" | tr '\n' ' ')"
  done
done
(cd $OUT && tar -cJf bench.tar.xz c-3 c-1000000 && rm -rf c-3 c-1000000)
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck*.log synccheck*.log racecheck*.log c-*.txt)
date -u >> "$OUT/device.txt"
