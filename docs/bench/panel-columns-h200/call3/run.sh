#!/usr/bin/env bash
# Call 3: the committed form. Per-level column solves stage the couplings from a group width
# of 16 (BLOCKTRI_PANEL_COLUMNS_STAGED=16, default) against never (=1000); the column path from
# k = 3. The #11 horizon grid beside the peers at k = 1, 4, 16, 32; GPU tests; sanitizers on the
# column solves; the segment path at n = 64 / 32 under a 512M cap (new path against the
# column-by-column one, BLOCKTRI_PANEL_COLUMNS_FROM=1000000).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_cholesky gpu_transfers errors; do
  timeout 200 $T/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for v in 16 1000; do
  BLOCKTRI_PANEL_COLUMNS_STAGED=$v timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 32,64 \
    --nrhs 8,16,24,32 --methods blocktri-gpu --runs 10 --out-dir "$OUT/s-$v" > "$OUT/s-$v.txt" 2>&1; echo "staged from $v rc=$?"
done
timeout 150 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --nrhs 1,4,16,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/peers" > "$OUT/peers.txt" 2>&1; echo "peers rc=$?"
(cd $OUT && tar -cJf bench.tar.xz s-16 s-1000 peers && rm -rf s-16 s-1000 peers)
grep -E " solve k=| solve  " "$OUT/peers.txt" | head -80
for g in 1,32768,64 1,131072,32; do
  for v in 3 1000000; do
    echo "== solve --generate $g, cap 512M, BLOCKTRI_PANEL_COLUMNS_FROM=$v" >> "$OUT/segments.txt"
    BLOCKTRI_PANEL_COLUMNS_FROM=$v BLOCKTRI_DEVICE_MEMORY_LIMIT=512M timeout 60 $B/blocktri solve --generate $g 2>&1 | grep -E "factor\+solve:|residual|rror" >> "$OUT/segments.txt"
  done
done
cat "$OUT/segments.txt"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_panel_column_solves > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck.log synccheck.log racecheck.log s-*.txt)
date -u >> "$OUT/device.txt"
