#!/usr/bin/env bash
# Call 2: the column solves' per-level kernels with the couplings read from global memory and
# tiles sized by k (one node of padded size 64 per SM in call 1, now up to four). Solve times
# for k = 1..32 at n = 32 / 64 on the column path (BLOCKTRI_PANEL_COLUMNS_FROM=2) and on the
# column-by-column path (=1000000), alternating, f64 and f32; GPU tests of the columns,
# memcheck and racecheck; the segment path at n = 64 / 32 under a 512M cap.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_cholesky --include-ignored --test-threads=3 many_columns both_kernel_families > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_cholesky.log" | head -12
for v in 2 1000000; do
  BLOCKTRI_PANEL_COLUMNS_FROM=$v timeout 120 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 \
    --nrhs 1,2,3,4,8,32 --methods blocktri-gpu --runs 10 --out-dir "$OUT/b-$v-1" > "$OUT/b-$v-1.txt" 2>&1; echo "bench f64 from=$v rc=$?"
done
for v in 2 1000000; do
  BLOCKTRI_PANEL_COLUMNS_FROM=$v timeout 90 $B/blocktri bench --suites horizon --batches 1 --nblocks 4096 --block-sizes 32,64 \
    --nrhs 1,2,4,8,32 --precision f32 --methods blocktri-gpu --runs 10 --out-dir "$OUT/b-$v-2" > "$OUT/b-$v-2.txt" 2>&1; echo "bench f32 from=$v rc=$?"
done
(cd $OUT && tar -cJf bench.tar.xz b-* && rm -rf b-2-1 b-2-2 b-1000000-1 b-1000000-2)
for g in 1,32768,64 1,131072,32; do
  for v in 2 1000000; do
    echo "== solve --generate $g, cap 512M, BLOCKTRI_PANEL_COLUMNS_FROM=$v" >> "$OUT/segments.txt"
    BLOCKTRI_PANEL_COLUMNS_FROM=$v BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate $g 2>&1 | grep -E "factor\+solve:|residual|rror" >> "$OUT/segments.txt"
  done
done
cat "$OUT/segments.txt"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_panel_column_solves > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck.log racecheck.log b-*.txt)
date -u >> "$OUT/device.txt"
