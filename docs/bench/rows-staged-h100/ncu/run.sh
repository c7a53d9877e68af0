#!/usr/bin/env bash
# ncu on the per-level rows factor (level 0 and level 2) and the single launch, N = 16384, n = 16, f64:
# full sections and per-instruction (SASS) stall samples.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; export BLOCKTRI_ROWS_STAGED=off
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; (nvidia-smi --query-gpu=name,driver_version --format=csv; date -u) | tee "$OUT/device.txt"
for spec in "factor_rows16_f64 0" "factor_rows16_f64 2" "factor_rows_dataflow16_f64 0"; do
  set -- $spec; k=$1; skip=$2
  timeout 240 $NCU --set full --import-source no --kernel-name $k --launch-skip $skip --launch-count 1 \
    -o "$OUT/$k-$skip" $B/blocktri profile --generate 16384,16 --repeat 1 > "$OUT/$k-$skip.log" 2>&1; echo "$k $skip rc=$?"
  timeout 120 $NCU --import "$OUT/$k-$skip.ncu-rep" --page details > "$OUT/$k-$skip-details.txt" 2>&1
  timeout 120 $NCU --import "$OUT/$k-$skip.ncu-rep" --page source --print-source sass --csv > "$OUT/$k-$skip-sass.csv" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Achieved Occupancy|Memory Throughput" "$OUT/$k-$skip-details.txt" | head -8
  gzip -9 "$OUT/$k-$skip-sass.csv"; rm -f "$OUT/$k-$skip.ncu-rep"
done
tar czf /tmp/results.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/results.tgz "$OUT/results.tgz"
