#!/usr/bin/env bash
# Call 4: the forward couplings of both sides in one launch per level, against
# BLOCKTRI_COUPLE=split (one launch per side) in the same build, alternating, two rounds:
# f64 and mixed (3xTF32) rows at n = 128, 256, 512. Then the GPU tests and the three
# sanitizers on sanitize_cholesky_tiled on this build (the final one).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
  for couple in both split; do
    BLOCKTRI_COUPLE=$couple timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 \
      --methods blocktri-gpu,blocktri-gpu-mixed --f32-products tf32x3 --runs 3 --out-dir "$OUT/bench-$couple-$round" > "$OUT/bench-$couple-$round.log" 2>&1
    echo "### couple $couple round $round rc=$?"; grep -E '^fp64-sweep f64' "$OUT/bench-$couple-$round.log" | grep -v transfer | awk '{print $4":"$6":"$7"="$8}' | tr '\n' ' '; echo
  done
done
timeout 60 $B/blocktri profile --generate 1024,256 --repeat 3 > "$OUT/profile-f64-n256.txt" 2>&1
echo "### profile rc=$?"; grep -E 'couple' "$OUT/profile-f64-n256.txt" | awk '{print $1, $2, $NF}' | tr '\n' ';'; echo
for t in gpu_mixed gpu_transfers errors gpu_memory_pressure gpu_cholesky; do
  timeout 230 $T/$t --test-threads=1 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 120 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/tiled-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/tiled-$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
rm -rf "$OUT"/bench-*/*.svg "$OUT"/bench-*/report.json
date -u >> "$OUT/device.txt"
