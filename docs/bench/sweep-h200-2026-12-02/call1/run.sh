#!/usr/bin/env bash
# Session 2026-12-02 evening, call 1: 3d781f3 (the last session's review mend, never run on
# a GPU) under gpu_cholesky's tiled cases, gpu_transfers, gpu_mixed and memcheck on
# sanitize_cholesky_tiled; then issue #10's FP64 sweep (N n = 262144, n = 32 .. 2048) with
# the peers (vendor-schur, vendor-seq, cuDSS 0.8) in the same run, f64 ($PRECS), on the
# committed code: the first peer comparison of the large-block engine on the H200.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
timeout 150 $T/gpu_transfers --include-ignored --test-threads=1 > "$OUT/r/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_transfers.log" | tail -1)"
timeout 130 $T/gpu_cholesky --include-ignored tiled --test-threads=1 > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"
timeout 30 $T/gpu_mixed --include-ignored --test-threads=1 > "$OUT/r/test-gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_mixed.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
timeout 40 $CS --tool memcheck --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-memcheck.log" 2>&1
echo "sanitize_cholesky_tiled memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/r/tiled-memcheck.log" | tr '\n' ' ')"
fi
for P in ${PRECS:-f64}; do
  timeout ${SWEEP_LIMIT:-330} $B/blocktri bench --full --suites fp64-sweep --block-sizes ${SIZES:-32,64,128,256,512,1024,2048} --precision $P \
    --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs ${RUNS:-3} --out-dir "$OUT/sweep-$P" > "$OUT/sweep-$P.log" 2>&1
  echo "sweep $P rc=$?"; grep -E "^\| " "$OUT/sweep-$P/report.md" | head -40
  date -u
done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
