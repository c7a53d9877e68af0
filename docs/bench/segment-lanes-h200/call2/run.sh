#!/usr/bin/env bash
# Call 2: the segment batches filled with non-temporal stores (default) against plain stores
# (BLOCKTRI_SEGMENT_FILL_PLAIN=1) and one lane (BLOCKTRI_SEGMENT_LANES=1), same binary,
# alternating; BLOCKTRI_TRACE at 1G, N = 1048576, n = 16 for both fills; gpu_transfers again.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
run() { # cap generate label env...
  local cap=$1 g=$2 label=$3; shift 3
  echo "== $label solve --generate $g, cap $cap" >> "$OUT/segments.txt"
  env "$@" BLOCKTRI_DEVICE_MEMORY_LIMIT=$cap timeout 90 $B/blocktri solve --generate $g 2>&1 | grep -E "factor\+solve:|rror" >> "$OUT/segments.txt"
}
for r in 1 2; do
  for g in 1,32768,64 1,131072,32 1,262144,16; do
    run 512M $g "nontemporal" X=1; run 512M $g "plain" BLOCKTRI_SEGMENT_FILL_PLAIN=1; run 512M $g "one lane" BLOCKTRI_SEGMENT_LANES=1
  done
  run 1G 1,1048576,16 "nontemporal" X=1; run 1G 1,1048576,16 "plain" BLOCKTRI_SEGMENT_FILL_PLAIN=1; run 1G 1,1048576,16 "one lane" BLOCKTRI_SEGMENT_LANES=1
done
cat "$OUT/segments.txt"
for v in "nontemporal X=1" "plain BLOCKTRI_SEGMENT_FILL_PLAIN=1"; do
  set -- $v
  echo "== $1: solve --generate 1,1048576,16, cap 1G, BLOCKTRI_TRACE=1" >> "$OUT/trace.txt"
  env $2 BLOCKTRI_TRACE=1 BLOCKTRI_DEVICE_MEMORY_LIMIT=1G timeout 90 $B/blocktri solve --generate 1,1048576,16 >> "$OUT/trace.txt" 2>&1
done
grep -E "^==|factor\+solve: segments|factor\+solve: [0-9]" "$OUT/trace.txt"
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
