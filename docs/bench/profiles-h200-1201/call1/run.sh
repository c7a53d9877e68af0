#!/usr/bin/env bash
# Per-launch profiles of #10's and #11's standing shapes on the committed build (9688d4b),
# factor + solve calls, to choose this session's work.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for g in 8192,32 4096,64 2048,128 512,512 256,1024 4096,16 16384,16; do
  timeout 90 $B/blocktri profile --generate $g --factor-solve --repeat 3 > "$OUT/r/profile-$g.txt" 2>&1
  echo "### $g rc=$? $(tail -1 $OUT/r/profile-$g.txt)"
done
timeout 90 $B/blocktri profile --generate 512,512 --repeat 3 > "$OUT/r/profile-fs-split-512,512.txt" 2>&1
timeout 90 $B/blocktri profile --generate 2048,128 --repeat 3 > "$OUT/r/profile-fs-split-2048,128.txt" 2>&1
(cd $OUT/r && for f in *.txt; do mv "$f" "${f//,/x}"; done); tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
