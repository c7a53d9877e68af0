#!/usr/bin/env bash
# The one-tile potrf's load and store with a base and a stride (perf-notes entry 46):
# tests, sanitizers, per-kernel sums and the sweep, against the previous build
# (blocktri-base) alternating in the same call.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
export BLOCKTRI_BIN=$PWD/.gpub/bin/blocktri
t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 240 $t/gpu_cholesky --test-threads=1 > $OUT/test-gpu_cholesky.log 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky.log | head -3
for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-$tool.log | tail -1)"
done
for b in blocktri-base blocktri; do
  for g in 2048,128 1024,256; do
    f="$OUT/sums-${g/,/x}-$b.txt"
    timeout 120 .gpub/bin/$b profile --generate $g --repeat 1 > "$f.raw" 2>&1
    awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
         END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
      "$f.raw" | sort -k4 -n -r > "$f"
    echo "== sums $g $b: $(grep tiled_potrf $f) | $(tail -1 $f)"
  done
done
for round in 1 2; do
  for b in blocktri-base blocktri; do
    timeout 200 .gpub/bin/$b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-$b-$round > $OUT/sweep-$b-$round.log 2>&1
    echo "== sweep $b round $round rc=$?"; grep -E "blocktri-gpu \| (factor|factor\+solve) \|" $OUT/sweep-$b-$round/report.md | awk -F'|' '{printf "%s/%s %s; ", $4,$7,$8}'; echo
  done
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
