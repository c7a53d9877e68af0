#!/usr/bin/env bash
# Entry 100, call 3: the look-ahead extended to the fused levels (the diagonal tile's
# update before each potrf carried, levels of up to 512 nodes). Tests first (gpu_transfers,
# gpu_cholesky's tiled cases, memcheck / synccheck / racecheck on sanitize_cholesky_tiled),
# then BLOCKTRI_LOOKAHEAD=off against its default, alternating, two rounds, f64 n = 256 / 512.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 100 $T/gpu_transfers --include-ignored --test-threads=1 > "$OUT/r/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_transfers.log" | tail -1)"
timeout 130 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-$tool.log" | tr '\n' ' ')"
done
for r in 1 2; do for v in off on; do
  env $([ $v = off ] && echo BLOCKTRI_LOOKAHEAD=off) timeout 100 $B/blocktri bench --full --suites fp64-sweep --block-sizes 256,512 \
    --precision f64 --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/f64-$v-$r" > "$OUT/r/f64-$v-$r.log" 2>&1
  grep -E '^fp64' "$OUT/r/f64-$v-$r.log" | grep -v transfer | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$OUT/summary.txt"
done; done
cat "$OUT/summary.txt"
rm -rf "$OUT"/r/*/*.svg "$OUT"/r/*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
