#!/usr/bin/env bash
# Call 1: the split walks against the node walks in one build (BLOCKTRI_SPLIT_WALKS=off),
# alternating, two rounds: f64 and mixed (3xTF32) rows at n = 128, 256, 512; then
# per-launch profiles of the f64 solve at n = 256 with and without; then the f32 profile.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for split in on off; do
    BLOCKTRI_SPLIT_WALKS=$split timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 \
      --methods blocktri-gpu,blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$split-$round" > "$OUT/bench-$split-$round.log" 2>&1
    echo "### split $split round $round rc=$?"; grep -E '^fp64-sweep f64' "$OUT/bench-$split-$round.log" | grep -v transfer | awk '{print $4":"$6":"$7"="$8}' | tr '\n' ' '; echo
  done
done
for split in on off; do
  BLOCKTRI_SPLIT_WALKS=$split timeout 60 $B/blocktri profile --generate 1024,256 --repeat 3 > "$OUT/profile-f64-256-$split.txt" 2>&1
  echo "### profile f64 n=256 split=$split rc=$?"; grep -iE 'forward|backward|total|sum' "$OUT/profile-f64-256-$split.txt" | head -40
done
BLOCKTRI_SPLIT_WALKS=on timeout 60 $B/blocktri profile --generate 1024,256 --precision f32 --f32-products tf32x3 --repeat 3 > "$OUT/profile-f32-256-on.txt" 2>&1
echo "### profile f32 rc=$?"
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg
date -u >> "$OUT/device.txt"
