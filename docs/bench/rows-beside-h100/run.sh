#!/usr/bin/env bash
# The rows factor's coupling solves beside warp 0's factor of D: v1 (warps 1, 2 factor
# their own copy of D), v2 (also the interlaced forward substitution's products beside
# its shuffle chain), v3 (warp 0 publishes L's first half at a mid-factor barrier, warps
# 1, 2 solve it while warp 0 finishes), against the previous build (base), alternating
# in one call (VARIANTS); GPU tests and sanitizers on the build named blocktri; peers.
# Usage: OUT=... bash .gpub/run.sh [tests] [sanitize] [bits] [ab] [profile] [peers]
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
steps=${*:-tests sanitize bits ab profile peers}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky errors recovery arrow selinv gpu_transfers external_layouts mpc}; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" "$OUT/test-$t.log" | head -5
done
BLOCKTRI_DATAFLOW_PER_SM=0 timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky-levels.log" 2>&1
echo "gpu_cholesky, every level per-level rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-levels.log" | tail -1)"
fi
if [[ " $steps " == *" sanitize "* ]]; then
for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 .gpub/tests/gpu_sanitize sanitize_cholesky_small > "$OUT/san-small-$tool.log" 2>&1
  echo "small $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san-small-$tool.log" | tail -1)"
done
fi
if [[ " $steps " == *" bits "* ]]; then
# Solutions of one generated problem from each build (factor + interlaced forward + backward).
for g in 16384,16 4096,8 1000,13 3,500,4; do for v in ${BITS:-base base v1 v2 v2}; do
  $B/blocktri-$v solve --generate $g --backend gpu --out /tmp/x-$v.npy > /dev/null 2>&1; md5sum < /tmp/x-$v.npy | cut -c1-12
done | tr '\n' ' ' | sed "s/^/bits $g (${BITS:-base base v1 v2 v2}): /"; echo; done | tee "$OUT/bits.txt"
fi
if [[ " $steps " == *" ab "* ]]; then
run() { # variant round
  timeout 200 $B/blocktri-$1 bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 4,8,16 --precision ${P:-f64} \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/h-$1-$2" > "$OUT/b/h-$1-$2.log" 2>&1
  echo "horizon $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' "$OUT/b/h-$1-$2/report.md" | awk -F'|' '{printf "N=%s n=%s %s %s; ", $3, $4, $6, $7}')"
}
for round in ${ROUNDS:-1 2}; do for v in ${VARIANTS:-base v1 v2}; do run $v $round; done; done
for v in ${VARIANTS:-base v2}; do P=f32 run $v f32; done
fi
if [[ " $steps " == *" profile "* ]]; then
for g in 16384,16 4096,16 16384,8; do for v in ${VARIANTS:-base v2}; do
  echo "== $v $g"; timeout 60 $B/blocktri-$v profile --generate $g --repeat 3 2>&1 | grep -E "factor_rows|sum of"
done; done > "$OUT/profile.txt" 2>&1; grep -E "==|sum of" "$OUT/profile.txt"
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 200 $B/blocktri bench --full --suites horizon --batches 1 --nblocks ${PN:-64,4096,16384} --block-sizes ${PB:-8,16,32} --precision f64 \
  --methods blocktri-gpu,vendor-schur,cudss --runs 10 --out-dir "$OUT/b/peers-horizon" > "$OUT/b/peers-horizon.log" 2>&1
echo "peers horizon rc=$?"
fi
date -u >> "$OUT/device.txt"
ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
