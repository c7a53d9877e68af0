#!/usr/bin/env bash
# Entry 99, call 4: call 3's binary again (no rebuild), the look-ahead on and off
# (BLOCKTRI_LOOKAHEAD=off) alternating: n = 1024, N = 256 three rounds and n = 2048, N = 128
# two rounds (call 3 put n = 512 within noise and n = 1024's factor -1.6 %).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
one() { # variant n round
  local v=$1 n=$2 r=$3
  env $([ $v = off ] && echo BLOCKTRI_LOOKAHEAD=off) timeout 150 $B/blocktri bench --full --suites fp64-sweep --block-sizes $n \
    --precision f64 --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64-$v-$n-$r" > "$OUT/r/f64-$v-$n-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/f64-$v-$n-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
}
for r in 1 2 3; do one off 1024 $r; one on 1024 $r; done
for r in 1 2; do one off 2048 $r; one on 2048 $r; done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
