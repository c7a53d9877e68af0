#!/usr/bin/env bash
# Entry 98, call 4: the levels that invert limited to 256 tile rows per system (n = 512: up
# to 32 nodes as before; n = 1024: up to 16, level 2's 32 nodes back to the per-step
# solves), after call 3 showed the n = 1024 factor +1.3 ms. blocktri against 5766ed8
# (blocktri-base), alternating, two rounds, as calls 2 and 3; no tests (call 3's binary
# with one constant changed).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
run() { # label round
  local label=$1 round=$2
  local bin=blocktri; [ $label = base ] && bin=blocktri-base
  timeout 100 $B/$bin bench --suites horizon --batches 1 --nblocks 512 --block-sizes 512 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$label-512-$round" > "$OUT/r/bench-$label-512-$round.log" 2>&1
  grep -E '^horizon' "$OUT/r/bench-$label-512-$round.log" | grep -v transfer | grep -v skipped | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  timeout 100 $B/$bin bench --full --suites fp64-sweep --block-sizes 1024 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$label-1024-$round" > "$OUT/r/bench-$label-1024-$round.log" 2>&1
  grep -E '^fp64' "$OUT/r/bench-$label-1024-$round.log" | grep -v transfer | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
}
run base 1; run new 1; run base 2; run new 2
awk '{print $1,$2,$6,$7,$9,$10,$11,$13}' "$OUT/summary.txt"
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
