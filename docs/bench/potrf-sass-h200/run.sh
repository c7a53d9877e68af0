#!/usr/bin/env bash
# The committed build: GPU tests that load kernels (the borrowed PTX index), then `ncu`
# with per-instruction sampling on one top-level tiled_potrf launch (n = 128), for the
# next form of the 8 x 8 diagonal factor (docs/perf-notes.md entries 66, 68).
# Usage: OUT=... bash .gpub/run.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_modules errors gpu_cholesky; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $NCU --kernel-name regex:tiled_potrf --launch-skip 22 --launch-count 1 --set full --section SourceCounters \
  --warp-sampling-interval 0 --warp-sampling-buffer-size 536870912 -f -o $OUT/potrf $B profile --generate 2048,128 --repeat 1 > $OUT/ncu.log 2>&1
echo "ncu rc=$?"
$NCU --import $OUT/potrf.ncu-rep --page source --csv --print-source sass > $OUT/sass.csv 2>&1
$NCU --import $OUT/potrf.ncu-rep --page details > $OUT/details.txt 2>&1
grep -E "Elapsed Cycles|Registers Per|Executed Instructions  " $OUT/details.txt | head -5
xz -9 $OUT/sass.csv; rm -f $OUT/potrf.ncu-rep; ls -la $OUT/sass.csv.xz
