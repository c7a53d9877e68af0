#!/usr/bin/env bash
# The per-step diagonal solves' right-hand-side copies through the node walks' batched
# copy (one function for both): GPU tests, sanitizers, solve times alternating with the
# previous build (blocktri-base), steps forced at n = 128, 256. Usage: bash .gpub/move.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 200 $t/gpu_cholesky --test-threads=1 > $OUT/test-cholesky.log 2>&1
echo "cholesky rc=$? $(grep -E 'test result' $OUT/test-cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-cholesky.log | head -5
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tail -1)"
done
run() { # variant round sizes precision env
  local bin=$b; [ $1 = base ] && bin=$base
  env $5 timeout 150 $bin bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
    --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2 $5: $(grep -E 'blocktri-gpu \| (solve|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
}
for round in 1 2; do for v in new base; do run $v $round 512,1024 f64 X=1; done; done
for v in new base; do run $v steps 128,256 f64 BLOCKTRI_TILED_SOLVE=steps; run $v 1 512,1024 f32 X=1; done
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
