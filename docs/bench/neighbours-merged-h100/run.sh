#!/usr/bin/env bash
# The tiled engine's neighbour products of both sides in one launch per level (BOTH_SIDES):
# GPU tests and sanitizers (also with the wide products forced), then the FP64 sweep with
# the previous build (blocktri-base), this build split (BLOCKTRI_NEIGHBOURS=split) and
# merged alternating in one call, per-level profiles, and the peers.
# Usage: OUT=... bash .gpub/run.sh [tests] [sanitize] [ab] [profile] [peers]
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
steps=${*:-tests sanitize ab profile peers}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky errors selinv gpu_mixed}; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" "$OUT/test-$t.log" | head -5
done
BLOCKTRI_WIDE_MIN_BLOCK=64 BLOCKTRI_WIDE_WAVES=0 timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky-wide.log" 2>&1
echo "gpu_cholesky, wide neighbour products forced rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-wide.log" | tail -1)"
fi
if [[ " $steps " == *" sanitize "* ]]; then
for wide in default forced; do for tool in memcheck racecheck synccheck; do
  env $([ $wide = forced ] && echo BLOCKTRI_WIDE_MIN_BLOCK=64 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_UPDATE=64) \
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 .gpub/tests/gpu_sanitize sanitize_cholesky_tiled > "$OUT/san-tiled-$wide-$tool.log" 2>&1
  echo "tiled ($wide wide) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san-tiled-$wide-$tool.log" | tail -1)"
done; done
fi
if [[ " $steps " == *" ab "* ]]; then
run() { # variant round
  local bin=$B/blocktri env=""; [ $1 = base ] && bin=$B/blocktri-base; [ $1 = split ] && env="BLOCKTRI_NEIGHBOURS=split"
  env $env timeout 200 $bin bench --suites fp64-sweep --block-sizes ${AB:-128,256,512} --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/b/s-$1-$2" > "$OUT/b/s-$1-$2.log" 2>&1
  echo "sweep $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' "$OUT/b/s-$1-$2/report.md" | awk -F'|' '{printf "n=%s %s %s; ", $4, $6, $7}')"
}
for round in ${ROUNDS:-1 2}; do for v in base split merged; do run $v $round; done; done
fi
if [[ " $steps " == *" profile "* ]]; then
for g in 2048,128 1024,256; do for v in split merged; do
  echo "== $v $g"; env $([ $v = split ] && echo BLOCKTRI_NEIGHBOURS=split) timeout 60 $B/blocktri profile --generate $g --repeat 3 2>&1 | grep -E "neighbours|sum of"
done; done > "$OUT/profile.txt" 2>&1; grep -E "==|sum of" "$OUT/profile.txt"
fi
if [[ " $steps " == *" peers "* ]]; then
timeout ${PT:-150} $B/blocktri bench --full --suites fp64-sweep --block-sizes ${PS:-128,256} --precision f64 \
  --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir "$OUT/b/peers-sweep" > "$OUT/b/peers-sweep.log" 2>&1
echo "peers sweep rc=$?"
fi
date -u >> "$OUT/device.txt"
ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
