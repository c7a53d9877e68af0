#!/usr/bin/env bash
# prep split / register-cap A/B (perf-notes entry 71). OUT must be set.
set -u; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for v in split split80 split64; do for k in tiled_prep_f64 tiled_prep_f32; do
  echo "$v $k $(ptxas -arch=sm_90 -v .gpub/ptx/$v/$k.ptx -o /dev/null 2>&1 | grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill (stores|loads)' | tr '\n' ' ')"
done; done
for t in gpu_cholesky errors; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_tiled > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck.log" | tr '\n' ' ')"
for g in 2048,128 1024,256; do for v in base split split80 split64; do
  f=$OUT/profile-${g/,/x}-$v.txt; timeout 90 $B/blocktri-$v profile --generate $g --repeat 1 > $f 2>&1
  echo "$g $v prep $(awk '$1 ~ /tiled_prep/ {s+=$NF} END {print s+0}' $f) $(grep 'sum of' $f)"
done; done
run() { timeout 200 $B/blocktri-$1 bench --full --suites fp64-sweep --block-sizes $3 --precision $4 --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"; }
for round in 1 2; do for v in base split split80 split64; do run $v $round 128,256 f64; done; done
for v in base split64; do run $v 1 128,256 f32; done
date -u >> "$OUT/device.txt"
