#!/usr/bin/env bash
# Call 4: the committed build (level kernels as in the base). The chunk planner's wait for
# pending frees: the memory tests, and the new test against the library without the wait
# (gpu_memory_pressure-unfixed, expected to fail); the transfer and mixed tests; the mixed
# rows at the default tolerance and at 1e-12 beside the f64 rows, n = 128, 256, 512.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests; W=/tmp/call4; mkdir -p $W
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
S="$OUT/summary.txt"
for t in gpu_memory_pressure gpu_transfers gpu_mixed; do
  timeout 200 $T/$t --test-threads=1 --nocapture > "$W/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$W/test-$t.log" | tail -1)" | tee -a $S; grep -E "FAILED|panicked|skipping" -A3 "$W/test-$t.log" | head -12 | tee -a $S
done
for i in 1 2; do
  timeout 100 $T/gpu_memory_pressure-unfixed --exact a_batch_that_fits_after_a_dropped_solver_runs_in_one_piece --nocapture > "$W/test-unfixed-$i.log" 2>&1
  echo "unfixed $i rc=$? $(grep -E 'test result' "$W/test-unfixed-$i.log" | tail -1)" | tee -a $S; grep -E "panicked" -A2 "$W/test-unfixed-$i.log" | head -4 | tee -a $S
done
timeout 250 $B/blocktri bench --full --suites fp64-sweep --block-sizes 128,256,512 --precision f64 --methods blocktri-gpu,blocktri-gpu-mixed \
  --f32-products tf32x3 --refine-tolerances 1e-13,1e-12 --runs 5 --out-dir "$W/bench-mixed" > "$W/bench-mixed.log" 2>&1
echo "mixed rc=$?" | tee -a $S
grep -E '^fp64-sweep' "$W/bench-mixed.log" | grep -v transfer | tee -a $S
rm -rf $W/bench-*/*.svg $W/bench-*/report.json
tar -C $W -cJf $OUT/results.tar.xz .
date -u >> "$OUT/device.txt"
