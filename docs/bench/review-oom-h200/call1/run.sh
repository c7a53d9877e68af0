#!/usr/bin/env bash
# Call 1: the review build (walk helpers, whole launch arguments) and the out-of-memory
# mapping against the base (aa0cb5c): GPU tests, sanitizers on the tiled case, the f64 /
# mixed rows at n = 128, 256 alternating with the base, and two profiles for planning.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for t in gpu_memory_pressure gpu_mixed errors; do
  timeout 150 $T/$t --test-threads=1 --nocapture > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked|solved, " -A3 "$OUT/test-$t.log" | head -12
done
timeout 150 $T/gpu_cholesky --test-threads=1 tiled > "$OUT/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky (tiled) rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky-tiled.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  timeout 90 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/tiled-$tool.log" | tr '\n' ' ')"
done
for round in 1 2; do for v in blocktri-base blocktri; do
  timeout 70 $B/$v bench --full --suites fp64-sweep --block-sizes 128,256 --precision f64 \
    --methods blocktri-gpu,blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$v-$round" > "$OUT/bench-$v-$round.log" 2>&1
  echo "$v $round rc=$? $(grep -E '^fp64-sweep f64' "$OUT/bench-$v-$round.log" | grep -v transfer | awk '{print $4":"$6":"$7"="$8}' | tr '\n' ' ')"
done; done
timeout 40 $B/blocktri profile --generate 16384,16 --factor-solve --repeat 3 > "$OUT/profile-n16-factor-solve.txt" 2>&1
timeout 40 $B/blocktri profile --generate 1024,256 --precision f32 --f32-products tf32x3 --repeat 3 > "$OUT/profile-f32-n256.txt" 2>&1
echo "profiles rc=$?"
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/bench-*/report.json
date -u >> "$OUT/device.txt"
