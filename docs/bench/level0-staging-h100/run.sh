#!/usr/bin/env bash
# Level 0 stages its input tiles in its own launches (prep copies only the separators):
# GPU tests, sanitizers, per-kernel profiles and the FP64 sweep's factor + solve
# alternating with the previous build (blocktri-base). Usage: bash .gpub/stage.sh
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
BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-memcheck-pairs.log 2>&1
echo "memcheck pairs rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-memcheck-pairs.log | tail -1)"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled_tf32 > $OUT/sanitize-memcheck-tf32.log 2>&1
echo "memcheck tf32 rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-memcheck-tf32.log | tail -1)"
for g in 2048,128 1024,256 256,1024; do
  for v in new base; do
    bin=$b; [ $v = base ] && bin=$base
    f=$OUT/profile-${g/,/x}-$v.txt; timeout 60 $bin profile --generate $g --repeat 1 > $f 2>&1
    echo "$g $v prep $(grep -E '^tiled_prep' $f | awk '{print $NF}') level0 $(awk '$2==0 && $1 ~ /tiled_(potrf|trsm|update)/ {s+=$NF} END {print s}' $f) $(grep 'sum of' $f)"
  done
done
run() { # variant round sizes precision
  local bin=$b; [ $1 = base ] && bin=$base
  timeout 150 $bin bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
    --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
  echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
}
for round in 1 2; do for v in new base; do run $v $round 128,256,512 f64; done; done
for v in new base; do run $v 1 1024 f64; run $v 1 128,256,512 f32; done
for f in gpu_transfers gpu_mixed; do
  timeout 150 $t/$f --test-threads=1 > $OUT/test-$f.log 2>&1; echo "$f rc=$? $(grep -E 'test result' $OUT/test-$f.log | tail -1)"
done
date -u >> $OUT/device.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
