#!/usr/bin/env bash
# Call 1: the segment path on two lanes. gpu_transfers (the chunked and segment tests), the
# sanitizers on the segment case, then the segment path (512M cap) new against b10a210
# alternating (and one lane, BLOCKTRI_SEGMENT_LANES=1), n = 64 / 32 / 16 and 1G at N = 1048576, n = 16, and the BLOCKTRI_TRACE phases at n = 64.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 120 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_segments_on_the_edges > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for g in 1,32768,64 1,131072,32 1,262144,16; do
  for run in 1 2; do
    for v in "blocktri 2" "blocktri 1" "blocktri-base 1"; do
      set -- $v
      echo "== $1 (lanes $2) solve --generate $g, cap 512M, run $run" >> "$OUT/segments.txt"
      BLOCKTRI_SEGMENT_LANES=$2 BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/$1 solve --generate $g 2>&1 | grep -E "factor\+solve:|rror|residual" >> "$OUT/segments.txt"
    done
  done
done
for v in "blocktri 2" "blocktri 1" "blocktri-base 1"; do
  set -- $v
  echo "== $1 (lanes $2) solve --generate 1,1048576,16, cap 1G" >> "$OUT/segments.txt"
  BLOCKTRI_SEGMENT_LANES=$2 BLOCKTRI_DEVICE_MEMORY_LIMIT=1G timeout 90 $B/$1 solve --generate 1,1048576,16 2>&1 | grep -E "factor\+solve:|rror|residual" >> "$OUT/segments.txt"
done
cat "$OUT/segments.txt"
echo "== solve --generate 1,32768,64, cap 512M, BLOCKTRI_TRACE=1" >> "$OUT/trace.txt"
BLOCKTRI_TRACE=1 BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate 1,32768,64 >> "$OUT/trace.txt" 2>&1
grep -vE '^\s*$' "$OUT/trace.txt" | tail -60
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
