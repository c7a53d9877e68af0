#!/usr/bin/env bash
# Call 2: the 3xTF32 split in three instructions (integer rounding of hi, lo truncated by
# the tensor cores) and the TF32 products' interior chunks copied without checks; the f64
# pivots' reciprocal square root refined by one third-order step. GPU tests, sanitizers on
# the TF32 tiled case and the mixed refinement; then new against the base (HEAD 457ebe7),
# alternating: the fp64 sweep at n = 256, 512, 1024 (f64 and mixed 3xTF32), and the f32
# factor with 3xTF32 / TF32 products at n = 256, 1024.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_mixed errors; do
  timeout 240 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tc in "memcheck sanitize_cholesky_tiled_tf32" "racecheck sanitize_cholesky_tiled_tf32" "synccheck sanitize_cholesky_tiled_tf32" "memcheck sanitize_mixed_refinement"; do set -- $tc
  timeout 200 $CS --tool $1 --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
row() { grep -E "^\|" "$1/report.md" 2>/dev/null | grep -E "factor|solve" | grep -v transfer | head -24; }
for bin in blocktri blocktri-base; do
  timeout 200 $B/$bin bench --full --suites fp64-sweep --block-sizes 256,512,1024 --precision f64 --methods blocktri-gpu,blocktri-gpu-mixed \
    --f32-products tf32x3 --runs 3 --out-dir "$OUT/sweep-$bin" > "$OUT/sweep-$bin.log" 2>&1
  echo "### sweep $bin rc=$?"; row "$OUT/sweep-$bin"
  for p in tf32x3 tf32; do
    timeout 150 $B/$bin bench --full --suites fp64-sweep --block-sizes 256,1024 --precision f32 --methods blocktri-gpu \
      --f32-products $p --runs 3 --out-dir "$OUT/f32-$p-$bin" > "$OUT/f32-$p-$bin.log" 2>&1
    echo "### f32 $p $bin rc=$?"; row "$OUT/f32-$p-$bin"
  done
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d sweep-* f32-* test-*.log *-sanitize_*.log) && rm -rf $OUT/sweep-* $OUT/f32-* $OUT/test-*.log $OUT/*-sanitize_*.log
date -u >> "$OUT/device.txt"
