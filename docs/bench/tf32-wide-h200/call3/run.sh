#!/usr/bin/env bash
# Call 3: the wide 128 x 128 TF32 neighbour products (8 warps of 64 x 32, 178 registers)
# against the 64 x 64 ones in the same build (BLOCKTRI_WIDE_MIN_BLOCK: 100000 = never wide,
# 256 = wide from n = 256; the default 512 is the same as 256 at n >= 512): the f32 factor with 3xTF32 and TF32 products and
# the mixed factor + solve. GPU tests of the TF32 products and the mixed mode; the three
# sanitizers on the TF32 tiled case with the wide products forced.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_cholesky --include-ignored --exact tf32_products_every_block_size > "$OUT/test-tf32.log" 2>&1
echo "gpu_cholesky tf32 rc=$? $(grep -E 'test result' "$OUT/test-tf32.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-tf32.log" | head -8
timeout 100 $T/gpu_mixed --test-threads=1 > "$OUT/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/test-gpu_mixed.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  BLOCKTRI_WIDE_MIN_BLOCK=128 BLOCKTRI_WIDE_WAVES=0 timeout 200 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored \
    --test-threads=1 --exact sanitize_cholesky_tiled_tf32 > "$OUT/$tool-wide-tf32.log" 2>&1
  echo "$tool wide tf32 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-wide-tf32.log" | tr '\n' ' ')"
done
row() { grep -E "^\|" "$1/report.md" 2>/dev/null | grep -E "factor|solve" | grep -v transfer | head -24; }
for round in 1 2; do
  for w in 100000 256; do
    for p in tf32x3 tf32; do
      [ $round = 2 ] && [ $p = tf32 ] && continue
      BLOCKTRI_WIDE_MIN_BLOCK=$w timeout 150 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256,512,1024 --precision f32 \
        --methods blocktri-gpu --f32-products $p --runs 3 --out-dir "$OUT/f32-$p-$w-$round" > "$OUT/f32-$p-$w-$round.log" 2>&1
      echo "### f32 $p wide-min $w round $round rc=$?"; row "$OUT/f32-$p-$w-$round" | grep factor
    done
  done
done
for w in 100000 256; do
  BLOCKTRI_WIDE_MIN_BLOCK=$w timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256,512,1024 --precision f64 \
    --methods blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/mixed-$w" > "$OUT/mixed-$w.log" 2>&1
  echo "### mixed wide-min $w rc=$?"; row "$OUT/mixed-$w"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f32-* mixed-* test-*.log *-wide-tf32.log) && rm -rf $OUT/f32-* $OUT/mixed-* $OUT/test-*.log $OUT/*-wide-tf32.log
date -u >> "$OUT/device.txt"
