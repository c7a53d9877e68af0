#!/usr/bin/env bash
# Call 1: the many-column panel solves (level::columns). GPU tests, sanitizers on the new
# kernels, then the horizon sweep at n = 32 / 64 for k = 1, 2, 4, 8, 32 columns beside the
# peers (new path), the same for blocktri-gpu alone on the column-by-column path
# (BLOCKTRI_PANEL_COLUMNS_FROM=1000000), and the segment path at n = 64 under a 512M cap.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers; do
  timeout 240 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096 --block-sizes 32,64 --nrhs 1,2,4,8,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/bench-new" > "$OUT/bench-new.txt" 2>&1; echo "bench new rc=$?"
BLOCKTRI_PANEL_COLUMNS_FROM=1000000 timeout 120 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096 --block-sizes 32,64 --nrhs 2,4,8,32 \
  --methods blocktri-gpu --out-dir "$OUT/bench-old" > "$OUT/bench-old.txt" 2>&1; echo "bench old rc=$?"
(cd $OUT && tar -cJf bench.tar.xz bench-new bench-old && rm -rf bench-new bench-old)
grep -E "blocktri-gpu|cudss|vendor" "$OUT/bench-new.txt" | grep -E " solve" | head -70
grep -E "blocktri-gpu" "$OUT/bench-old.txt" | grep -E " solve" | head -40
for g in 1,32768,64 1,131072,32; do
  for r in 1 2; do
    for v in 2 1000000; do
      echo "== solve --generate $g, cap 512M, BLOCKTRI_PANEL_COLUMNS_FROM=$v, round $r" >> "$OUT/segments.txt"
      BLOCKTRI_PANEL_COLUMNS_FROM=$v BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate $g 2>&1 | grep -E "factor\+solve:|residual|rror" >> "$OUT/segments.txt"
    done
  done
done
cat "$OUT/segments.txt"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_panel_column_solves > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck.log synccheck.log racecheck.log bench-old.txt)
date -u >> "$OUT/device.txt"
