#!/usr/bin/env bash
# Streamed node walks, final rule (perf-notes entry 47): GPU tests and sanitizers
# (walks everywhere, and one launch per tile step forced), per-kernel sums of the new build
# (walks, steps) and of the previous one, the FP64 sweep with the peers next to the
# previous build, and the f32 sweep.
# Usage: bash .gpub/walk3.sh [tests] [sums] [bench] [f32]
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
export BLOCKTRI_BIN=$PWD/.gpub/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
sums() { # binary size name env...
  bin=$1; g=$2; name=$3; shift 3
  f="$OUT/sums-${g/,/x}-$name.txt"
  env "$@" timeout 100 $bin profile --generate $g --repeat 1 > "$f.raw" 2>&1
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6; if ($1 ~ /forward|backward/) v += $NF }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "solve %.1f us\ntotal %.1f us\n", v, t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== $g $name: $(grep -E '_node_|_diag_' $f | awk '{printf "%s %s | ", $1, $4}') $(grep -E '^(solve|total)' $f | tr '\n' ' ')"
}
for step in ${*:-tests sums}; do
  case $step in
    tests)
      for x in gpu_cholesky gpu_mixed gpu_transfers; do
        timeout 240 $t/$x --test-threads=1 > $OUT/test-$x.log 2>&1
        echo "$x rc=$? $(grep -E 'test result' $OUT/test-$x.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-$x.log | head -3
      done
      BLOCKTRI_TILED_SOLVE=steps timeout 240 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-gpu_cholesky-steps.log 2>&1
      echo "gpu_cholesky tiled steps rc=$? $(grep -E 'test result' $OUT/test-gpu_cholesky-steps.log | tail -1)"
      for tool in memcheck racecheck synccheck; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-$tool.log 2>&1
        echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tail -1)"
      done
      BLOCKTRI_TILED_SOLVE=steps timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $t/gpu_sanitize sanitize_cholesky_tiled > $OUT/sanitize-memcheck-steps.log 2>&1
      echo "memcheck steps rc=$? $(grep -E 'ERROR SUMMARY' $OUT/sanitize-memcheck-steps.log | tail -1)" ;;
    sums)
      for g in 2048,128 1024,256 512,512 256,1024 128,2048; do
        sums $b $g walk
        sums $b $g steps BLOCKTRI_TILED_SOLVE=steps
        sums $base $g base
      done ;;
    bench)
      timeout 330 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/sweep > $OUT/sweep.log 2>&1
      echo "sweep rc=$?"; grep -E "^\| " $OUT/sweep/report.md | head -16
      timeout 120 $base bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-base > $OUT/sweep-base.log 2>&1
      echo "sweep base rc=$?"; grep -E "^\| " $OUT/sweep-base/report.md | head -8 ;;
    f32)
      timeout 150 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f32 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-f32 > $OUT/sweep-f32.log 2>&1
      echo "sweep f32 rc=$?"; grep -E "^\| " $OUT/sweep-f32/report.md | head -8
      timeout 120 $base bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f32 \
        --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-f32-base > $OUT/sweep-f32-base.log 2>&1
      echo "sweep f32 base rc=$?"; grep -E "^\| " $OUT/sweep-f32-base/report.md | head -8 ;;
  esac
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
