#!/usr/bin/env bash
# Call 3: the final build (split walks up to 4 tiles, the backward blocks' loads after one
# wait) against BLOCKTRI_SPLIT_WALKS=off, alternating, two rounds: f64 and mixed (3xTF32)
# rows at n = 128, 256, 512; the f64 solve's launches at n = 256, 128 with the split.
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
for g in 1024,256 2048,128; do
  timeout 60 $B/blocktri profile --generate $g --repeat 3 > "$OUT/profile-f64-$g.txt" 2>&1
  echo "### profile f64 $g rc=$?"; grep -E 'split|_node' "$OUT/profile-f64-$g.txt" | awk '{print $1, $2, $NF}' | tr '\n' ';'; echo
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/bench-*/report.json
date -u >> "$OUT/device.txt"
T=.gpub/tests
timeout 120 $T/gpu_memory_pressure > "$OUT/test-gpu_memory_pressure.txt" 2>&1
echo "gpu_memory_pressure rc=$? $(grep -E 'test result' "$OUT/test-gpu_memory_pressure.txt" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_memory_pressure.txt" | head -12
