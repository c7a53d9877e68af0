#!/usr/bin/env bash
# Backward walks that subtract the couplings themselves on levels with many nodes: GPU
# tests (as dispatched and with the coupled walks forced everywhere), sanitizers with them
# forced, event-timed profiles and the FP64 sweep's solve and factor + solve alternating
# BLOCKTRI_COUPLED_WALK=off (couplings apart, as before) with the default, same binary.
# Usage: bash .gpub/coupled.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 200 $t/gpu_cholesky --test-threads=1 > $OUT/test-cholesky.log 2>&1
echo "cholesky rc=$? $(grep -E 'test result' $OUT/test-cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-cholesky.log | head -5
BLOCKTRI_COUPLED_WALK=on timeout 120 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-tiled-forced.log 2>&1
echo "tiled forced rc=$? $(grep -E 'test result' $OUT/test-tiled-forced.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-tiled-forced.log | head -5
for tool in memcheck racecheck; do
  BLOCKTRI_COUPLED_WALK=on timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tail -1)"
done
for g in 2048,128 1024,256; do
  for v in auto off; do
    f=$OUT/profile-${g/,/x}-$v.txt; BLOCKTRI_COUPLED_WALK=$v timeout 60 $b profile --generate $g --repeat 1 > $f 2>&1
    echo "$g $v backward: $(grep -E '^tiled_backward' $f | awk '{s+=$NF} END {printf "%.0f us", s}')  total: $(grep sum $f)"
  done
done
run() { # variant round sizes precision
  BLOCKTRI_COUPLED_WALK=$1 timeout 120 $b bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
    --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (solve|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
}
for round in 1 2; do for v in auto off; do run $v $round 128,256,512 f64; done; done
for v in auto off; do run $v 3 1024 f64; run $v 1 128,256,512 f32; done
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
