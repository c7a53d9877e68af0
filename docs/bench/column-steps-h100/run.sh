#!/usr/bin/env bash
# Column updates fused with the solves below the diagonal tile, and wide pairs of columns
# (perf-notes entry 46): tests and sanitizers (default and forced everywhere), per-kernel
# sums of four variants, the FP64 sweep with the peers and the sweep of the old sequence.
# Usage: bash .gpub/fused.sh [tests] [sums] [bench]
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
OLD="BLOCKTRI_UPDATE_TRSM_NODES=1000000000 BLOCKTRI_WIDE_UPDATE=off"
FORCED="BLOCKTRI_UPDATE_TRSM_NODES=1 BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0"
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
sums() { # size name env...
  g=$1; name=$2; shift 2
  f="$OUT/sums-${g/,/x}-$name.txt"
  env "$@" timeout 150 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== $g $name: $(grep -E 'tiled_(wide_)?update|tiled_trsm' $f | awk '{printf "%s %s | ", $1, $4}') $(tail -1 $f)"
}
for step in ${*:-tests sums bench}; do
  case $step in
    tests)
      timeout 300 $t/gpu_cholesky --test-threads=1 > $OUT/test-gpu_cholesky.log 2>&1
      echo "gpu_cholesky default rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky.log | head -3
      env $FORCED timeout 300 $t/gpu_cholesky --test-threads=1 > $OUT/test-gpu_cholesky-forced.log 2>&1
      echo "gpu_cholesky forced rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky-forced.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky-forced.log | head -3
      for tool in memcheck racecheck synccheck; do
        env $FORCED timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool-forced.log 2>&1
        echo "$tool forced rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool-forced.log | tail -1)"
      done ;;
    sums)
      for g in 1024,256 2048,128 512,512 256,1024; do
        sums $g old $OLD
        sums $g fused BLOCKTRI_WIDE_UPDATE=off
        sums $g fused1 BLOCKTRI_WIDE_UPDATE=off BLOCKTRI_UPDATE_TRSM_NODES=1
        sums $g default
      done ;;
    bench)
      timeout 400 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/sweep > $OUT/sweep.log 2>&1
      echo "sweep rc=$?"; grep -E "^\| " $OUT/sweep/report.md | head -16
      env $OLD timeout 150 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-old > $OUT/sweep-old.log 2>&1
      echo "sweep old rc=$?"; grep -E "^\| " $OUT/sweep-old/report.md | head -8
      timeout 150 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-new2 > $OUT/sweep-new2.log 2>&1
      echo "sweep new2 rc=$?"; grep -E "^\| " $OUT/sweep-new2/report.md | head -8 ;;
  esac
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
