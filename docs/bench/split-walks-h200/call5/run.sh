#!/usr/bin/env bash
# Call 5: the committed build (the split kernels' shared preamble folded into SplitBlock,
# no change meant): the GPU tests, memcheck and racecheck on sanitize_cholesky_tiled, and
# the f64 / mixed rows at n = 128, 256 once.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 100 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
  --methods blocktri-gpu,blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench" > "$OUT/bench.log" 2>&1
echo "### bench rc=$?"; grep -E '^fp64-sweep f64' "$OUT/bench.log" | grep -v transfer | awk '{print $4":"$6":"$7"="$8}' | tr '\n' ' '; echo
for t in gpu_mixed gpu_transfers errors gpu_memory_pressure; do
  timeout 120 $T/$t --test-threads=1 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
timeout 200 $T/gpu_cholesky --test-threads=1 tiled > "$OUT/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky (tiled) rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/tiled-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench/*.svg "$OUT"/bench/report.json
date -u >> "$OUT/device.txt"
