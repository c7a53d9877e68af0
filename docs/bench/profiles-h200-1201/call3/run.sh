#!/usr/bin/env bash
# Diagnostic builds: blocktri-trace (call 2's marks plus mark 7 after the node's input
# loads returned) and blocktri-trace-pf (the same, with each single-launch node
# prefetching its read-only input diagonal block into L2 before it waits; trace-pf.patch).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
for bin in blocktri-trace blocktri-trace-pf; do
for g in 4096x16 16384x16 8192x32; do
  gg=${g/x/,}
  for fs in "" "--factor-solve"; do
    tag=$bin-$g${fs:+-fs}-$round
    timeout 120 $B/$bin profile --generate $gg $fs --repeat 1 > "$OUT/r/$tag.txt" 2>&1
    echo "### $tag rc=$? $(grep -c NODE $OUT/r/$tag.txt)"
  done
done
done
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
