#!/usr/bin/env bash
# Call 3: the committed build (d8d8405; the refactored warp kernels, no spill). GPU tests and
# sanitizers, one more round of BLOCKTRI_SOLVE_WARPS=0 / 3 at n = 12, 16.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; R=$OUT/r; mkdir -p $R
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_cholesky --include-ignored --test-threads=2 > "$R/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$R/test-gpu_cholesky.log" | tail -1)" | tee -a $OUT/summary.txt
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for f in sanitize_cholesky_small sanitize_cholesky_large; do for tool in memcheck racecheck synccheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $f > "$R/$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$R/$f-$tool.log" | tr '\n' ' ')" | tee -a $OUT/summary.txt
done; done
for w in 0 3; do for p in f64 f32; do
  BLOCKTRI_SOLVE_WARPS=$w timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 12,16 --precision $p \
    --methods blocktri-gpu --runs 10 --out-dir "$R/bench-w$w-$p" > "$R/bench-w$w-$p.log" 2>&1
  echo "w$w $p rc=$?"
  grep -E '^horizon' "$R/bench-w$w-$p.log" | grep -v transfer | awk -v v=w$w '{print v, 1, $0}' >> "$OUT/summary.txt"
done; done
rm -rf $R/*/*.svg
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
date -u >> "$OUT/device.txt"
