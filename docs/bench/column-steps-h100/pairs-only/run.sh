#!/usr/bin/env bash
# Column updates in wide pairs (perf-notes entry 46): tests and sanitizers (default and
# pairs forced everywhere), per-kernel sums with pairs on and off, and the FP64 sweep
# with the peers plus the same sweep without pairs.
# Usage: bash .gpub/pairs.sh [tests] [sums] [bench]
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
sums() { # size variant(env value of BLOCKTRI_WIDE_UPDATE or "default")
  f="$OUT/sums-${1/,/x}-$2.txt"
  if [ "$2" = default ]; then env -u BLOCKTRI_WIDE_UPDATE timeout 150 $b profile --generate $1 --repeat 1 > "$f.raw" 2>&1
  else BLOCKTRI_WIDE_UPDATE=$2 timeout 150 $b profile --generate $1 --repeat 1 > "$f.raw" 2>&1; fi
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== $1 $2: $(grep -E 'tiled_(wide_)?update' $f | awk '{printf "%s %s | ", $1, $4}') $(tail -1 $f)"
}
for step in ${*:-tests sums bench}; do
  case $step in
    tests)
      timeout 300 $t/gpu_cholesky --test-threads=1 > $OUT/test-gpu_cholesky.log 2>&1
      echo "gpu_cholesky default rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky.log | head -3
      BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 timeout 300 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-gpu_cholesky-forced.log 2>&1
      echo "gpu_cholesky tiled forced rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky-forced.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-gpu_cholesky-forced.log | head -3
      for tool in memcheck racecheck synccheck; do
        BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool-forced.log 2>&1
        echo "$tool forced rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-$tool-forced.log | tail -1)"
      done ;;
    sums)
      for g in 512,512 256,1024 128,2048; do
        for v in off default; do sums $g $v; done
      done
      for g in 1024,256 2048,128; do
        for v in off 256; do sums $g $v; done
      done ;;
    bench)
      timeout 420 $b bench --full --suites fp64-sweep --block-sizes 256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/sweep > $OUT/sweep.log 2>&1
      echo "sweep rc=$?"; grep -E "^\| " $OUT/sweep/report.md | head -14
      BLOCKTRI_WIDE_UPDATE=off timeout 200 $b bench --full --suites fp64-sweep --block-sizes 512,1024,2048 --precision f64 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-off > $OUT/sweep-off.log 2>&1
      echo "sweep off rc=$?"; grep -E "^\| " $OUT/sweep-off/report.md | head -8 ;;
  esac
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
