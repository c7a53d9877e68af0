#!/usr/bin/env bash
# Fused tiled column steps (perf-notes entry 44): tests, sanitizers, per-kernel sums, and
# the FP64 sweep with the peers. Usage: bash .gpub/step.sh [tests] [sums] [bench]
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
export BLOCKTRI_BIN=$PWD/.gpub/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
b=.gpub/bin/blocktri; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
sums() { # size variant
  f="$OUT/sums-${1/,/x}-$2.txt"
  BLOCKTRI_TILED_STEP=$2 timeout 120 $b profile --generate $1 --repeat 1 > "$f.raw" 2>&1
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== $1 $2: $(tail -1 $f)"
}
for step in ${*:-tests sums bench}; do
  case $step in
    tests)
      for v in auto split fused; do
        BLOCKTRI_TILED_STEP=$v timeout 240 $t/gpu_cholesky --test-threads=1 > $OUT/test-gpu_cholesky-$v.log 2>&1
        echo "gpu_cholesky $v rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky-$v.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky-$v.log | head -3
      done
      for v in auto split; do
        for tool in memcheck racecheck synccheck; do
          BLOCKTRI_TILED_STEP=$v timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool-$v.log 2>&1
          echo "$tool $v rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-$tool-$v.log | tail -1)"
        done
      done ;;
    sums)
      for g in 2048,128 1024,256 512,512 256,1024; do
        for v in split fused auto; do sums $g $v; done
      done ;;
    bench)
      timeout 420 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 \
        --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/sweep > $OUT/sweep.log 2>&1
      echo "sweep rc=$?"; grep -E "^\| " $OUT/sweep/report.md | head -12
      for v in split fused; do
        BLOCKTRI_TILED_STEP=$v timeout 200 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 \
          --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-$v > $OUT/sweep-$v.log 2>&1
        echo "sweep $v rc=$?"; grep -E "^\| " $OUT/sweep-$v/report.md | head -8
      done ;;
  esac
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
