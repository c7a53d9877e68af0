#!/usr/bin/env bash
# Entry 97, call 2: the 128-column steps (blocktri) against 5766ed8 (blocktri-base, the same
# column steps as 8a6354a), f64 factor + solve, S = 1, alternating, two rounds of n = 256, 512
# and 1024 (horizon suite, medians of 10), one of n = 2048; per-launch profiles of the new
# binary at n = 512 and 1024; then the default-dispatch tiled f64 GPU test (call 1 ran it
# under a 200 s limit that the whole gpu_cholesky run outlasts).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    sizes="1024:256 512:512 256:1024"; [ $round = 1 ] && sizes="1024:256 512:512 256:1024 128:2048"
    for g in $sizes; do
      N=${g%:*}; n=${g#*:}
      timeout 150 $B/$bin bench --suites horizon --batches 1 --nblocks $N --block-sizes $n --precision f64 \
        --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$bin-$n-$round" > "$OUT/r/bench-$bin-$n-$round.log" 2>&1
      echo "### $bin $n round $round rc=$?"
      grep -E '^horizon' "$OUT/r/bench-$bin-$n-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
    done
  done
done
cat "$OUT/summary.txt"
timeout 60 $B/blocktri profile --generate 256,1024 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-256x1024.txt" 2>&1
timeout 60 $B/blocktri profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-512x512.txt" 2>&1
timeout 60 $B/blocktri-base profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-base-512x512.txt" 2>&1
echo "### profiles $(tail -1 $OUT/r/profile-blocktri-512x512.txt)"
timeout 200 $T/gpu_cholesky --test-threads=1 --exact tiled_engine_every_block_size_f64 > "$OUT/r/test-tiled-f64.log" 2>&1
echo "tiled_engine_every_block_size_f64 rc=$? $(grep -E 'test result' "$OUT/r/test-tiled-f64.log" | tail -1)"
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
