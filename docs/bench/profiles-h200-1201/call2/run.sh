#!/usr/bin/env bash
# Diagnostic build (trace.patch beside this script): each node of the single-launch factor
# prints its level, SM, global times (start, dependencies met, body done, published) and
# the cycles between the body's phases. Not a committed build.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for g in 4096x16 16384x16 8192x32 4096x64; do
  gg=${g/x/,}
  for fs in "" "--factor-solve"; do
    tag=$g${fs:+-fs}
    timeout 120 $B/blocktri-trace profile --generate $gg $fs --repeat 1 > "$OUT/r/trace-$tag.txt" 2>&1
    echo "### $tag rc=$? $(grep -c NODE $OUT/r/trace-$tag.txt) $(grep 'sum of kernel' $OUT/r/trace-$tag.txt | tail -1)"
  done
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
