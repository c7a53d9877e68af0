#!/usr/bin/env bash
# Entry 97, call 3: after call 2's profile, the diagonal block's update on three 64 x 64 blocks
# per node (instead of one wide block: two waves of one block per SM) and pair_inverse's sums
# side by side (instead of 16 chains of 64 dependent multiply-adds). blocktri (the change)
# against 5766ed8 (blocktri-base), alternating, two rounds: horizon n = 256 (N = 1024) and
# n = 512 (N = 512), medians of 10; the fp64 sweep's n = 1024 (N = 256, `--full`, medians of
# 5; the horizon suite skips it for memory). Profiles of the change at n = 512 and 1024. Then
# the default-dispatch tiled f64 GPU test, and compute-sanitizer memcheck, synccheck and
# racecheck on sanitize_cholesky_tiled with the 128-column steps forced on every level.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    for g in 1024:256 512:512; do
      N=${g%:*}; n=${g#*:}
      timeout 150 $B/$bin bench --suites horizon --batches 1 --nblocks $N --block-sizes $n --precision f64 \
        --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$bin-$n-$round" > "$OUT/r/bench-$bin-$n-$round.log" 2>&1
      echo "### $bin $n round $round rc=$?"
      grep -E '^horizon' "$OUT/r/bench-$bin-$n-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
    done
    timeout 150 $B/$bin bench --full --suites fp64-sweep --block-sizes 1024 --precision f64 \
      --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$bin-1024-$round" > "$OUT/r/bench-$bin-1024-$round.log" 2>&1
    echo "### $bin 1024 round $round rc=$?"
    grep -E '^fp64' "$OUT/r/bench-$bin-1024-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  done
done
awk '{print $1,$2,$6,$7,$9,$10,$11}' "$OUT/summary.txt"
timeout 60 $B/blocktri profile --generate 256,1024 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-256x1024.txt" 2>&1
timeout 60 $B/blocktri profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-512x512.txt" 2>&1
echo "### profiles $(tail -1 $OUT/r/profile-blocktri-512x512.txt)"
timeout 200 $T/gpu_cholesky --test-threads=1 --exact tiled_engine_every_block_size_f64 > "$OUT/r/test-tiled-f64.log" 2>&1
echo "tiled_engine_every_block_size_f64 rc=$? $(grep -E 'test result' "$OUT/r/test-tiled-f64.log" | tail -1)"
FORCE="BLOCKTRI_PAIR_STEPS_MIN_BLOCK=64 BLOCKTRI_PAIR_STEPS_NODES=1 BLOCKTRI_WIDE_WAVES=0"
env $FORCE timeout 200 $T/gpu_cholesky --test-threads=1 --exact tiled_engine_every_block_size_f64 > "$OUT/r/test-tiled-f64-forced.log" 2>&1
echo "tiled_engine_every_block_size_f64 forced rc=$? $(grep -E 'test result' "$OUT/r/test-tiled-f64-forced.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  env $FORCE timeout 150 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-pairs-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (128-column steps forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-pairs-$tool.log" | tr '\n' ' ')"
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
