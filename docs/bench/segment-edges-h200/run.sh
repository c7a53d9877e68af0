#!/usr/bin/env bash
# The segment path's coupling columns solved on the tree's edge nodes only (issue #12,
# docs/perf-notes.md entry 65): the GPU tests of the host path and of the kernels, the
# sanitizers on the segment and family cases, then `blocktri solve` of one chain larger
# than a device-memory cap (the build before, blocktri-base = de80982, and this one
# alternating), a trace of each, and the device-resident small-block horizon (the rows
# kernels changed) for both builds. `first-build/`: the build that also restricted the
# panel solves (all steps); the top level: the committed build (tests, sanitize, ab,
# horizon). `ptxas/`: register counts of the extracted kernels (extract_ptx.py).
# Usage: [BINS='a b'] [TESTS='a b'] OUT=... bash .gpub/run.sh [tests] [sanitize] [ab] [trace] [horizon]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize ab trace horizon}
if [[ " $steps " == *" tests "* ]]; then
  for t in ${TESTS:-gpu_transfers gpu_cholesky}; do
    timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
fi
if [[ " $steps " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_segments_on_the_edges sanitize_cholesky_every_family sanitize_cholesky_small > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
  done
fi
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 60000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
if [[ " $steps " == *" ab "* ]]; then
for case in "1,1048576,16 1G" "1,32768,64 512M" "1,262144,16 256M"; do
  set -- $case
  for bin in ${BINS:-blocktri-base blocktri blocktri-base blocktri}; do
    echo "== $bin solve --generate $1, cap $2"
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 timeout 100 $B/$bin solve --generate $1 2>&1 | grep -E "factor\+solve:|residual|rror"
  done
done 2>&1 | tee "$OUT/solve.txt"
fi
if [[ " $steps " == *" trace "* ]]; then
for case in 1,1048576,16_1G 1,32768,64_512M; do
  set -- ${case/_/ }
  for bin in blocktri-base blocktri; do
    BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 BLOCKTRI_TRACE=1 timeout 100 $B/$bin solve --generate $1 > "$OUT/trace-$bin-${1//,/-}.txt" 2>&1
    grep -E "factor\+solve: segments" "$OUT/trace-$bin-${1//,/-}.txt" | sed "s/^/$bin: /"
  done
done
fi
if [[ " $steps " == *" horizon "* ]]; then
  for bin in blocktri-base blocktri blocktri-base blocktri; do
    echo "== $bin"
    timeout 200 $B/$bin bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 8,16,32,64 --precision f64 --methods blocktri-gpu --runs 20 2>&1 | grep -E "^horizon" | grep -v transfer
  done 2>&1 | tee "$OUT/horizon.txt"
fi
date -u >> "$OUT/device.txt"
