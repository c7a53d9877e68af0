#!/usr/bin/env bash
# Entry 97, call 4: after call 3 (no faster: the solve as one K = 128 product with the whole
# inverse did 4/3 of the solve's flops, half the update's at n = 512), the solve in two
# 128 x 64 products (X_1 = B_1 W_1^T, X_2 = [X_1 B_2] U^T, U = [-W_2 L_21, W_2]): the 64-column
# steps' flops. blocktri (the change) against 5766ed8 (blocktri-base), alternating, two
# rounds: horizon n = 256 (N = 1024), n = 512 (N = 512), medians of 10; fp64 sweep n = 1024
# (N = 256, --full, medians of 5); round 1 also the change with the 128-column steps from 64
# nodes (BLOCKTRI_PAIR_STEPS_NODES=64). Profile of the change at n = 512; the tiled f64 GPU
# test (default and forced) and compute-sanitizer on sanitize_cholesky_tiled, forced.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
run() { # label round env...
  local label=$1 round=$2; shift 2
  local bin=blocktri; [ $label = base ] && bin=blocktri-base
  for g in 1024:256 512:512; do
    N=${g%:*}; n=${g#*:}
    env "$@" timeout 100 $B/$bin bench --suites horizon --batches 1 --nblocks $N --block-sizes $n --precision f64 \
      --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$label-$n-$round" > "$OUT/r/bench-$label-$n-$round.log" 2>&1
    grep -E '^horizon' "$OUT/r/bench-$label-$n-$round.log" | grep -v transfer | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  done
  [ $label = nodes64 ] && return
  env "$@" timeout 100 $B/$bin bench --full --suites fp64-sweep --block-sizes 1024 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$label-1024-$round" > "$OUT/r/bench-$label-1024-$round.log" 2>&1
  grep -E '^fp64' "$OUT/r/bench-$label-1024-$round.log" | grep -v transfer | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
}
run base 1 X=1; run new 1 X=1; run nodes64 1 BLOCKTRI_PAIR_STEPS_NODES=64; run base 2 X=1; run new 2 X=1
awk '{print $1,$2,$6,$7,$9,$10,$11}' "$OUT/summary.txt"
timeout 40 $B/blocktri profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-512x512.txt" 2>&1
echo "### profile $(tail -1 $OUT/r/profile-blocktri-512x512.txt)"
timeout 100 $T/gpu_cholesky --test-threads=1 --exact tiled_engine_every_block_size_f64 > "$OUT/r/test-tiled-f64.log" 2>&1
echo "tiled_engine_every_block_size_f64 rc=$? $(grep -E 'test result' "$OUT/r/test-tiled-f64.log" | tail -1)"
FORCE="BLOCKTRI_PAIR_STEPS_MIN_BLOCK=64 BLOCKTRI_PAIR_STEPS_NODES=1 BLOCKTRI_WIDE_WAVES=0"
env $FORCE timeout 100 $T/gpu_cholesky --test-threads=1 --exact tiled_engine_every_block_size_f64 > "$OUT/r/test-tiled-f64-forced.log" 2>&1
echo "tiled_engine_every_block_size_f64 forced rc=$? $(grep -E 'test result' "$OUT/r/test-tiled-f64-forced.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  env $FORCE timeout 120 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-pairs-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (128-column steps forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-pairs-$tool.log" | tr '\n' ' ')"
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
