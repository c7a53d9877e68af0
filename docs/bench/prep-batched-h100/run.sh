#!/usr/bin/env bash
# Prep with its loads batched (16 per thread before their stores): the tiled GPU tests,
# memcheck, the prep kernel's time and the FP64 sweep at n = 128, 256, alternating with
# the previous build. Usage: bash .gpub/prep.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 150 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-tiled.log 2>&1
echo "tiled rc=$? $(grep -E 'test result' $OUT/test-tiled.log | tail -1)"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-memcheck.log 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-memcheck.log | tail -1)"
for g in 2048,128 1024,256 512,512; do
  for v in new base; do
    bin=$b; [ $v = base ] && bin=$base
    f=$OUT/profile-${g/,/x}-$v.txt; timeout 60 $bin profile --generate $g --repeat 1 > $f 2>&1
    echo "$g $v prep: $(grep -E '^tiled_prep' $f | awk '{print $NF}')"
  done
done
for round in 1 2; do
  for v in new base; do
    bin=$b; [ $v = base ] && bin=$base
    timeout 100 $bin bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/f64-$v-$round > $OUT/f64-$v-$round.log 2>&1
    echo "$v $round: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/f64-$v-$round/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
  done
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
