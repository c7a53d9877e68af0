#!/usr/bin/env bash
# Programmatic dependent launches (every kernel starts with griddepcontrol.wait, the host
# launches with programmatic stream serialization): GPU tests and sanitizers with them on,
# then the benchmark with BLOCKTRI_DEPENDENT_LAUNCH=off alternating in the same binary.
# Usage: OUT=... bash .gpub/run.sh [tests] [sanitize] [ab] [peers]
# (ab3.sh beside it: the early-trigger, wait-only and off variants in one call.)
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
export BLOCKTRI_BIN=$PWD/$B/blocktri
(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; date -u) | tee "$OUT/device.txt"
$B/blocktri info 2>&1 | head -4 | tee -a "$OUT/device.txt"
steps=${*:-tests sanitize ab}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky gpu_transfers errors recovery tridiag selinv gpu_mixed arrow}; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" "$OUT/test-$t.log" | head -5
done
BLOCKTRI_DATAFLOW_PER_SM=0 timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky-levels.log" 2>&1
echo "gpu_cholesky, every level per-level rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-levels.log" | tail -1)"
fi
if [[ " $steps " == *" sanitize "* ]]; then
for f in sanitize_cholesky_small sanitize_cholesky_tiled; do for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 .gpub/tests/gpu_sanitize $f > "$OUT/san-$f-$tool.log" 2>&1
  echo "$f $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san-$f-$tool.log" | tail -1)"
done; done
fi
if [[ " $steps " == *" ab "* ]]; then
run() { # variant round
  local env=""; [ $1 = off ] && env="BLOCKTRI_DEPENDENT_LAUNCH=off"
  env $env timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 8,16,32,64 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/h-$1-$2" > "$OUT/b/h-$1-$2.log" 2>&1
  echo "horizon $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' "$OUT/b/h-$1-$2/report.md" | awk -F'|' '{printf "N=%s n=%s %s %s; ", $3, $4, $6, $7}')"
  env $env timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 \
    --methods blocktri-gpu --runs 3 --out-dir "$OUT/b/s-$1-$2" > "$OUT/b/s-$1-$2.log" 2>&1
  echo "sweep $1 $2: $(grep -E 'blocktri-gpu \| (factor\+solve) \|' "$OUT/b/s-$1-$2/report.md" | awk -F'|' '{printf "n=%s %s; ", $4, $7}')"
}
for round in ${ROUNDS:-1 2}; do for v in on off; do run $v $round; done; done
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 150 $B/blocktri bench --full --suites horizon --batches 1 --nblocks ${PN:-64,4096,16384} --block-sizes ${PB:-8,16,32} --precision f64 \
  --methods blocktri-gpu,vendor-schur,cudss --runs 10 --out-dir "$OUT/b/peers-horizon" > "$OUT/b/peers-horizon.log" 2>&1
echo "peers horizon rc=$?"
timeout 120 $B/blocktri bench --full --suites fp64-sweep --block-sizes ${PS:-128,256} --precision f64 \
  --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir "$OUT/b/peers-sweep" > "$OUT/b/peers-sweep.log" 2>&1
echo "peers sweep rc=$?"
fi
if [[ " $steps " == *" profile "* ]]; then
for g in 16384,16 2048,128; do for v in on off; do
  echo "== $v $g"; env $([ $v = off ] && echo BLOCKTRI_DEPENDENT_LAUNCH=off) timeout 60 $B/blocktri profile --generate $g --repeat 3 2>&1 | grep -E "sum of|launches"
done; done > "$OUT/profile.txt" 2>&1; cat "$OUT/profile.txt"
fi
date -u >> "$OUT/device.txt"
ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
