#!/usr/bin/env bash
# The tiled factor + solve with each level's forward sweep on a side stream: GPU tests,
# sanitizers, then the FP64 sweep's factor + solve alternating BLOCKTRI_FORWARD_BESIDE=off
# (one stream, as before) with the default, same binary. Usage: bash .gpub/beside.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 200 $t/gpu_cholesky --test-threads=1 > $OUT/test-cholesky.log 2>&1
echo "cholesky rc=$? $(grep -E 'test result' $OUT/test-cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-cholesky.log | head -5
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tail -1)"
done
run() { # variant round sizes precision
  local env=""; [ $1 = off ] && env="BLOCKTRI_FORWARD_BESIDE=off"
  env $env timeout 120 $b bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
    --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s | ", $4, $7}')"
}
for round in 1 2; do for v in beside off; do run $v $round 128,256,512 f64; done; done
for v in beside off; do run $v 1 1024 f64; run $v 1 128,256,512 f32; done
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
