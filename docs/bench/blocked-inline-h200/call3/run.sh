#!/usr/bin/env bash
# Session 2026-12-03, call 3: call 2's column bodies inlined into the per-level kernels only
# (the single launch keeps them as called functions: inlined there it was 14-34 % slower at
# N = 512). base = call 1's inl, new = the committed form. Solves with k = 8 and 32 columns,
# alternating, two rounds in f64, one in f32; the FP64 sweep's n = 32 and 64 beside the peers
# (new); the column tests, memcheck and synccheck on new.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 200 $B/blocktri-$1 bench --full --suites horizon --batches 1 --nblocks 512,4096 --block-sizes 8,16,32,64 --nrhs 8,32 \
  --precision $2 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/$3 > /dev/null 2>&1; echo "$3 rc=$?"; }
for round in 1 2; do for v in base new; do s1 $v f64 f64-$v-$round; done; done
for v in base new; do s1 $v f32 f32-$v-1; done
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
timeout 200 $B/blocktri-new bench --full --suites fp64-sweep --block-sizes 32,64 --precision f64,f32 \
  --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 7 --out-dir $OUT/r/peers > $OUT/r/peers.log 2>&1; echo "peers rc=$?"
grep -E "^\| 1 \| (8192|4096) " $OUT/r/peers/report.md | grep -v transfer | cut -c1-110
timeout 200 $T/gpu_cholesky --include-ignored many_columns > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky many_columns rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck; do
  timeout 60 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_column_solves > "$OUT/r/$tool.log" 2>&1
  echo "sanitize_column_solves $tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
